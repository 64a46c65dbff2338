"""Wrong answers to chapter 00's exercises (see README.md here)."""

WRONG = {
    "ex00-1": [
        ("class FixedNet(nn.Module):\n"
         "    def __init__(self):\n"
         "        super().__init__()\n"
         "        self.body = nn.Linear(8, 16)\n"
         "        self.head = nn.Linear(16, 5)  # wrong number of classes\n"
         "    def forward(self, x):\n"
         "        return self.head(torch.relu(self.body(x)))\n",
         "the output should have shape (4, 3)"),
        ("class FixedNet(nn.Module):  # fits by shrinking the hidden layer\n"
         "    def __init__(self):\n"
         "        super().__init__()\n"
         "        self.body = nn.Linear(8, 32)\n"
         "        self.head = nn.Linear(32, 3)\n"
         "    def forward(self, x):\n"
         "        return self.head(torch.relu(self.body(x)))\n",
         "keep the hidden width at 16"),
    ],
    "ex00-2": [
        ("def predict(model, x):  # tracks gradients\n"
         "    model_device = next(model.parameters()).device\n"
         "    return model(x.to(model_device)).argmax(dim=1).detach().cpu().numpy()\n",
         "build no graph"),
        ("def predict(model, x):  # returns a tensor\n"
         "    was_training = model.training\n"
         "    model.eval()\n"
         "    with torch.no_grad():\n"
         "        out = model(x.to(next(model.parameters()).device)).argmax(dim=1)\n"
         "    model.train(was_training)\n"
         "    return out\n",
         "return a NumPy array, not Tensor"),
        ("def predict(model, x):  # the probabilities' max, not the class\n"
         "    was_training = model.training\n"
         "    model.eval()\n"
         "    with torch.no_grad():\n"
         "        out = model(x.to(next(model.parameters()).device))\n"
         "    model.train(was_training)\n"
         "    return out.max(dim=1).values.cpu().numpy()\n",
         "predictions differ from the model's"),
        ("def predict(model, x):  # the chapter's old solution: dropout stays on\n"
         "    model_device = next(model.parameters()).device\n"
         "    with torch.no_grad():\n"
         "        return model(x.to(model_device)).argmax(dim=1).cpu().numpy()\n",
         "predict in evaluation mode"),
        ("def predict(model, x):  # eval mode, never switched back\n"
         "    model.eval()\n"
         "    with torch.no_grad():\n"
         "        out = model(x.to(next(model.parameters()).device))\n"
         "        return out.argmax(dim=1).cpu().numpy()\n",
         "leave the model in the mode it was in"),
    ],
    "ex00-3": [
        ('facts_a = dict(cuda_build=None, is_available=False, driver_version="550.54")\n'
         'facts_b = dict(cuda_build="12.6", is_available=False, driver_version=None)\n'
         'a_must_change = "driver"\n',
         "is A's problem the wheel or the driver?"),
        ('facts_a = dict(cuda_build="12.6", is_available=False, driver_version="550.54")\n'
         'facts_b = dict(cuda_build="12.6", is_available=False, driver_version=None)\n'
         'a_must_change = "wheel"\n',
         "A's torch has no CUDA in it"),
    ],
}
