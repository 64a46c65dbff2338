"""Wrong answers to chapter 03's exercises (see README.md here)."""

import textwrap

_EVAL_LOOP = (
    "    correct = total = 0\n"
    "    with torch.no_grad():\n"
    "        for inputs, targets in loader:\n"
    "            predictions = model(inputs.to(device)).argmax(dim=1).cpu()\n"
    "            correct += (predictions == targets).sum().item()\n"
    "            total += len(targets)\n"
)

WRONG = {
    "ex03-1": [
        ("def train_fixed(model, loader, optimizer):  # zero_grad added, still in eval mode\n"
         "    model.eval()\n"
         "    for inputs, targets in loader:\n"
         "        optimizer.zero_grad()\n"
         "        loss = F.cross_entropy(model(inputs), targets)\n"
         "        loss.backward()\n"
         "        optimizer.step()\n",
         "the model should be in training mode while it trains"),
        ("def train_fixed(model, loader, optimizer):  # train mode, gradients still pile up\n"
         "    model.train()\n"
         "    for inputs, targets in loader:\n"
         "        loss = F.cross_entropy(model(inputs), targets)\n"
         "        loss.backward()\n"
         "        optimizer.step()\n",
         "weights differ from the canonical loop's"),
        ("def train_fixed(model, loader, optimizer):  # zero_grad between backward and step\n"
         "    model.train()\n"
         "    for inputs, targets in loader:\n"
         "        loss = F.cross_entropy(model(inputs), targets)\n"
         "        loss.backward()\n"
         "        optimizer.zero_grad()\n"
         "        optimizer.step()\n",
         "zero_grad, forward, loss, backward, step"),
        ("def train_fixed(model, loader, optimizer):  # right loop, then 'tidies up'\n"
         "    model.train()\n"
         "    for inputs, targets in loader:\n"
         "        optimizer.zero_grad()\n"
         "        loss = F.cross_entropy(model(inputs), targets)\n"
         "        loss.backward()\n"
         "        optimizer.step()\n"
         "    model.eval()\n",
         "the model should be in training mode while it trains"),
        ("def train_fixed(model, loader, optimizer):  # clips, which the question excludes\n"
         "    model.train()\n"
         "    for inputs, targets in loader:\n"
         "        optimizer.zero_grad()\n"
         "        loss = F.cross_entropy(model(inputs), targets)\n"
         "        loss.backward()\n"
         "        nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.1)\n"
         "        optimizer.step()\n",
         "weights differ from the canonical loop's"),
    ],
    "ex03-2": [
        ("def accuracy_of(model, loader):  # no_grad only: dropout still drops\n"
         + _EVAL_LOOP +
         "    return correct / total\n",
         "is dropout still on during evaluation?"),
        ("def accuracy_of(model, loader):  # switches to eval and leaves it there\n"
         "    model.eval()\n"
         + _EVAL_LOOP +
         "    return correct / total\n",
         "put the model back in training mode afterwards"),
        ("def accuracy_of(model, loader):  # always back to train mode\n"
         "    model.eval()\n"
         + _EVAL_LOOP +
         "    model.train()\n"
         "    return correct / total\n",
         "a model that came in eval mode should stay in it"),
        ("def accuracy_of(model, loader):  # eval mode is taken to be enough\n"
         "    was_training = model.training\n"
         "    model.eval()\n"
         "    correct = total = 0\n"
         "    for inputs, targets in loader:\n"
         "        predictions = model(inputs.to(device)).argmax(dim=1).cpu()\n"
         "        correct += (predictions == targets).sum().item()\n"
         "        total += len(targets)\n"
         "    model.train(was_training)\n"
         "    return correct / total\n",
         "build no graph"),
        ("def accuracy_of(model, loader):  # returns a tensor\n"
         "    was_training = model.training\n"
         "    model.eval()\n"
         "    correct, total = torch.tensor(0), 0\n"
         "    with torch.no_grad():\n"
         "        for inputs, targets in loader:\n"
         "            predictions = model(inputs.to(device)).argmax(dim=1).cpu()\n"
         "            correct += (predictions == targets).sum()\n"
         "            total += len(targets)\n"
         "    model.train(was_training)\n"
         "    return correct / total\n",
         "return a Python float, not Tensor"),
        ("def accuracy_of(model, loader):  # a percentage\n"
         "    was_training = model.training\n"
         "    model.eval()\n"
         + _EVAL_LOOP +
         "    model.train(was_training)\n"
         "    return 100.0 * correct / total\n",
         "return a fraction between 0 and 1"),
        ("def accuracy_of(model, loader):  # the mean of the batches' accuracies\n"
         "    was_training = model.training\n"
         "    model.eval()\n"
         "    per_batch = []\n"
         "    with torch.no_grad():\n"
         "        for inputs, targets in loader:\n"
         "            predictions = model(inputs.to(device)).argmax(dim=1).cpu()\n"
         "            per_batch.append((predictions == targets).float().mean().item())\n"
         "    model.train(was_training)\n"
         "    return sum(per_batch) / len(per_batch)\n",
         "expected "),
        ("def accuracy_of(model, loader):  # mode restored, but not after an error\n"
         "    was_training = model.training\n"
         "    model.eval()\n"
         + _EVAL_LOOP +
         "    model.train(was_training)\n"
         "    return correct / total\n",
         "restore the mode in a finally: block"),
        ("def accuracy_of(model, loader):  # restored in finally, a read every batch\n"
         "    was_training = model.training\n"
         "    model.eval()\n"
         "    try:\n"
         + textwrap.indent(_EVAL_LOOP, "    ") +
         "        return correct / total\n"
         "    finally:\n"
         "        model.train(was_training)\n",
         "read the total once, after the loop"),
    ],
    "ex03-3": [
        ("def total_grad_norm(model):  # adds the per-parameter norms\n"
         "    return sum(p.grad.norm().item() for p in model.parameters()\n"
         "               if p.grad is not None)\n",
         "the L2 norm of all the gradients"),
        ("def total_grad_norm(model):  # the squared norm: no square root\n"
         "    return sum(p.grad.pow(2).sum().item() for p in model.parameters()\n"
         "               if p.grad is not None)\n",
         "the L2 norm of all the gradients"),
        ("def total_grad_norm(model):  # every parameter is assumed to have a gradient\n"
         "    norms = torch.stack([p.grad.norm() for p in model.parameters()])\n"
         "    return torch.linalg.vector_norm(norms).item()\n",
         "skip parameters whose .grad is None"),
        ("def total_grad_norm(model):  # weights only, biases forgotten\n"
         "    norms = [p.grad.norm() for name, p in model.named_parameters()\n"
         "             if name.endswith('weight') and p.grad is not None]\n"
         "    return torch.linalg.vector_norm(torch.stack(norms)).item()\n",
         "expected "),
        ("def total_grad_norm(model):  # the largest single gradient entry\n"
         "    return max(p.grad.abs().max().item() for p in model.parameters()\n"
         "               if p.grad is not None)\n",
         "expected "),
    ],
}
