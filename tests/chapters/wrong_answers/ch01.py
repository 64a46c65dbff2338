"""Wrong answers to chapter 01's exercises (see README.md here)."""

WRONG = {
    "ex01-1": [
        ("def grad_f(A, v):  # forgot the 2 of the square's derivative\n"
         "    return torch.outer(A @ v, v)\n",
         "differs from numerical_grad"),
        ("def grad_f(A, v):  # the outer product the wrong way round\n"
         "    return 2 * torch.outer(v, A @ v)\n",
         "the gradient has A's shape (3, 4), got (4, 3)"),
        ("def grad_f(A, v):  # d/dA of (Av)^2 'is' 2 A v, broadcast\n"
         "    return 2 * A * v\n",
         "differs from numerical_grad"),
        ("def grad_f(A, v):  # lets autograd do it instead of a formula\n"
         "    A = A.detach().clone().requires_grad_(True)\n"
         "    (A @ v).pow(2).sum().backward()\n"
         "    return A.grad\n",
         "use the formula you derived, not autograd"),
    ],
    "ex01-2": [
        ("def softmax_ce_backward(logits, targets):  # the buggy version, unchanged\n"
         "    probs = torch.softmax(logits, dim=1)\n"
         "    return probs - F.one_hot(targets, logits.shape[1])\n",
         "off by a factor of about 5.00"),
        ("def softmax_ce_backward(logits, targets):  # divides by the classes, not the batch\n"
         "    probs = torch.softmax(logits, dim=1)\n"
         "    return (probs - F.one_hot(targets, logits.shape[1])) / logits.shape[1]\n",
         "off by a factor of about 1.25"),
        ("def softmax_ce_backward(logits, targets):  # the sign flipped\n"
         "    probs = torch.softmax(logits, dim=1)\n"
         "    return (F.one_hot(targets, logits.shape[1]) - probs) / len(logits)\n",
         "off by a factor of about -1.00"),
        ("def softmax_ce_backward(logits, targets):  # log-probabilities, not probabilities\n"
         "    log_probs = torch.log_softmax(logits, dim=1)\n"
         "    return (log_probs - F.one_hot(targets, logits.shape[1])) / len(logits)\n",
         "not by one factor"),
        ("def softmax_ce_backward(logits, targets):  # asks autograd instead\n"
         "    logits = logits.detach().clone().requires_grad_(True)\n"
         "    F.cross_entropy(logits, targets).backward()\n"
         "    return logits.grad\n",
         "correct the formula instead of calling autograd"),
    ],
    "ex01-3": [
        ('predictions = {"b": True, "c": True, "d": True, "e": True, "f": False}  # all from a\n',
         "look again at: c, d"),
        ('predictions = {"b": True, "c": False, "d": False, "e": False, "f": False}  # detach '
         "'spreads'\n",
         "look again at: e"),
        ('predictions = {"b": True, "c": False, "d": True, "e": True, "f": False}  # no_grad '
         "ignored\n",
         "look again at: d"),
    ],
}
