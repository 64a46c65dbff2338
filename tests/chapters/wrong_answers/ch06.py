"""Wrong answers to chapter 06's exercises (see README.md here)."""

WRONG = {
    "ex06-1": [
        ("def first_nonfinite(named):  # keeps looking: returns the last bad tensor\n"
         "    found = None\n"
         "    for name, tensor in named.items():\n"
         "        if not torch.isfinite(tensor).all():\n"
         "            found = name\n"
         "    return found\n",
         "the NaN is born in 'ratio' (the first one), you returned 'output'"),
        ("def first_nonfinite(named):  # looks for NaN only\n"
         "    for name, tensor in named.items():\n"
         "        if torch.isnan(tensor).any():\n"
         "            return name\n"
         "    return None\n",
         "an infinity counts too"),
        ("def first_nonfinite(named):  # 'any finite' instead of 'all finite'\n"
         "    for name, tensor in named.items():\n"
         "        if not torch.isfinite(tensor).any():\n"
         "            return name\n"
         "    return None\n",
         "one NaN element is enough"),
        ("def first_nonfinite(named):  # an empty string for 'nothing found'\n"
         "    for name, tensor in named.items():\n"
         "        if not torch.isfinite(tensor).all():\n"
         "            return name\n"
         "    return ''\n",
         "all finite: return None, not ''"),
    ],
    "ex06-2": [
        ("def safe_distance(u, v, eps=1e-12):  # eps added after the square root\n"
         "    return torch.sqrt(((u - v) ** 2).sum(dim=1)) + eps\n",
         "gradient at equal rows is not finite"),
        ("def safe_distance(u, v):  # torch.where still back-propagates through sqrt(0)\n"
         "    squared = ((u - v) ** 2).sum(dim=1)\n"
         "    return torch.where(squared > 0, torch.sqrt(squared), torch.zeros_like(squared))\n",
         "gradient at equal rows is not finite"),
        ("def safe_distance(u, v, eps=1e-6):  # an eps large enough to bias small distances\n"
         "    return torch.sqrt(((u - v) ** 2).sum(dim=1) + eps)\n",
         "your eps shifts small distances too much"),
        ("def safe_distance(u, v, eps=1e-12):  # sums over every element, not per row\n"
         "    return torch.sqrt(((u - v) ** 2).sum() + eps)\n",
         "one distance per row: expected shape (3,), got ()"),
        ("def safe_distance(u, v):  # avoids the sqrt: the squared distance\n"
         "    return ((u - v) ** 2).sum(dim=1)\n",
         "distance of (3, 4) should be 5, got 25"),
        ("def safe_distance(u, v):  # the library's norm: right, but not the exercise\n"
         "    return torch.linalg.norm(u - v, dim=1)\n",
         "you called ['linalg_norm']: repair the square root of summed squares yourself"),
        ("def safe_distance(u, v, eps=1e-12):  # clamps the distance, not its square\n"
         "    return torch.sqrt(((u - v) ** 2).sum(dim=1)).clamp_min(eps)\n",
         "gradient at equal rows is not finite"),
        ("def safe_distance(u, v, eps=1e-7):  # eps added to the difference (pairwise_distance)\n"
         "    return torch.sqrt(((u - v + eps) ** 2).sum(dim=1))\n",
         "gradient at equal rows should be 0, as torch.linalg.norm's is"),
    ],
    "ex06-3": [
        ("def step_if_finite(model, optimizer):  # steps first, checks after\n"
         "    optimizer.step()\n"
         "    return all(bool(torch.isfinite(p).all()) for p in model.parameters())\n",
         "with a NaN gradient the weights are no longer finite"),
        ("def step_if_finite(model, optimizer):  # looks for NaN only\n"
         "    if any(torch.isnan(p.grad).any() for p in model.parameters()):\n"
         "        return False\n"
         "    optimizer.step()\n"
         "    return True\n",
         "with an infinite gradient the weights are no longer finite"),
        ("def step_if_finite(model, optimizer):  # clips, then steps if finite\n"
         "    norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)\n"
         "    if not torch.isfinite(norm):\n"
         "        return False\n"
         "    optimizer.step()\n"
         "    return True\n",
         "it does not clip or change the gradients"),
        ("def step_if_finite(model, optimizer):  # skips, but forgets to say so\n"
         "    grads = [p.grad for p in model.parameters()]\n"
         "    if torch.isfinite(nn.utils.get_total_norm(grads)):\n"
         "        optimizer.step()\n"
         "        return True\n",
         "with a NaN gradient return False (the step was skipped); you returned None"),
        ("def step_if_finite(model, optimizer):  # the total norm: inf for large finite grads\n"
         "    grads = [p.grad for p in model.parameters()]\n"
         "    if not torch.isfinite(nn.utils.get_total_norm(grads)):\n"
         "        return False\n"
         "    optimizer.step()\n"
         "    return True\n",
         "gradients of 2e19 are large but finite: step and return True; you returned False"),
    ],
}
