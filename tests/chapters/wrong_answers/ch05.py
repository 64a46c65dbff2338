"""Wrong answers to chapter 05's exercises (see README.md here)."""

WRONG = {
    "ex05-1": [
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
    "ex05-2": [
        ("def diagnose(step_losses, val_losses):  # ignores the curves\n"
         "    return 'healthy'\n",
         "lr too high (2.0): you said 'healthy'"),
        ("def diagnose(step_losses, val_losses):  # 'stuck near the start' read as too low\n"
         "    end = float(np.mean(step_losses[-10:]))\n"
         "    if end > 0.8 * step_losses[0]:\n"
         "        return 'lr too low'\n"
         "    if max(step_losses) > 2 * step_losses[0]:\n"
         "        return 'lr too high'\n"
         "    if val_losses[-1] > 1.3 * min(val_losses):\n"
         "        return 'overfitting'\n"
         "    return 'healthy'\n",
         "lr too high (2.0): you said 'lr too low'"),
        ("def diagnose(step_losses, val_losses):  # any val-above-train gap as overfitting\n"
         "    end = float(np.mean(step_losses[-10:]))\n"
         "    if max(step_losses) > 2 * step_losses[0] and end > 0.9 * CHANCE:\n"
         "        return 'lr too high'\n"
         "    if end > 0.8 * step_losses[0]:\n"
         "        return 'lr too low'\n"
         "    if val_losses[-1] > end:\n"
         "        return 'overfitting'\n"
         "    return 'healthy'\n",
         "healthy (lr 0.03): you said 'overfitting'"),
        ("def diagnose(step_losses, val_losses):  # overfitting = val above its first value\n"
         "    end = float(np.mean(step_losses[-10:]))\n"
         "    if max(step_losses) > 2 * step_losses[0] and end > 0.9 * CHANCE:\n"
         "        return 'lr too high'\n"
         "    if end > 0.8 * step_losses[0]:\n"
         "        return 'lr too low'\n"
         "    if val_losses[-1] > val_losses[0]:\n"
         "        return 'overfitting'\n"
         "    return 'healthy'\n",
         "overfitting (60 samples): you said 'healthy'"),
    ],
    "ex05-3": [
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
}
