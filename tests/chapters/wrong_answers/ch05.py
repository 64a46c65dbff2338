"""Wrong answers to chapter 05's exercises (see README.md here)."""

WRONG = {
    "ex05-1": [
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
    "ex05-2": [
        ("def grad_flags(model, inputs, targets):  # no zero_grad: an old gradient stays\n"
         "    F.cross_entropy(model(inputs), targets).backward()\n"
         "    flags = {}\n"
         "    for name, p in model.named_parameters():\n"
         "        if p.grad is None:\n"
         "            flags[name] = 'none'\n"
         "        elif (p.grad == 0).all():\n"
         "            flags[name] = 'zero'\n"
         "        else:\n"
         "            flags[name] = 'ok'\n"
         "    return flags\n",
         "clear the gradients first with model.zero_grad()"),
        ("def grad_flags(model, inputs, targets):  # zeroes the old gradients in place\n"
         "    model.zero_grad(set_to_none=False)\n"
         "    F.cross_entropy(model(inputs), targets).backward()\n"
         "    flags = {}\n"
         "    for name, p in model.named_parameters():\n"
         "        if p.grad is None:\n"
         "            flags[name] = 'none'\n"
         "        elif (p.grad == 0).all():\n"
         "            flags[name] = 'zero'\n"
         "        else:\n"
         "            flags[name] = 'ok'\n"
         "    return flags\n",
         "side is cut off by the detach, so this backward gives it no gradient; you said 'zero'"),
        ("def grad_flags(model, inputs, targets):  # a missing gradient read as zeros\n"
         "    model.zero_grad()\n"
         "    F.cross_entropy(model(inputs), targets).backward()\n"
         "    flags = {}\n"
         "    for name, p in model.named_parameters():\n"
         "        g = p.grad if p.grad is not None else torch.zeros_like(p)\n"
         "        flags[name] = 'zero' if (g == 0).all() else 'ok'\n"
         "    return flags\n",
         "stem is frozen: its .grad is None, flag it 'none'"),
        ("def grad_flags(model, inputs, targets):  # judges by requires_grad, not by .grad\n"
         "    model.zero_grad()\n"
         "    F.cross_entropy(model(inputs), targets).backward()\n"
         "    return {name: 'none' if not p.requires_grad else 'ok'\n"
         "            for name, p in model.named_parameters()}\n",
         "side is cut off by the detach"),
    ],
    "ex05-3": [
        ("def per_class_recall(logits, labels, num_classes):  # precision: divides by predictions\n"
         "    predicted = logits.argmax(dim=1)\n"
         "    return [(labels[predicted == c] == c).float().mean().item()\n"
         "            for c in range(num_classes)]\n",
         "its recall is 0.75; you gave 0.5"),
        ("def per_class_recall(logits, labels, num_classes):  # the accuracy, for every class\n"
         "    accuracy = (logits.argmax(dim=1) == labels).float().mean().item()\n"
         "    return [accuracy] * num_classes\n",
         "its recall is 0.75; you gave 0.5"),
        ("def per_class_recall(logits, labels, num_classes):  # positive score = a hit\n"
         "    return [(logits[labels == c, c] > 0).float().mean().item()\n"
         "            for c in range(num_classes)]\n",
         "its recall is 0.75; you gave 0 "),
        ("def per_class_recall(logits, labels, num_classes):  # divides by all examples\n"
         "    predicted = logits.argmax(dim=1)\n"
         "    return [((predicted == c) & (labels == c)).sum().item() / len(labels)\n"
         "            for c in range(num_classes)]\n",
         "its recall is 0.75; you gave 0.375"),
    ],
}
