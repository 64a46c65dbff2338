"""Wrong answers to chapter 07's exercises (see README.md here)."""

_EVERY_OTHER = (
    "class CheckpointEveryOther(Blocks):\n"
    "    def forward(self, x):\n"
    "        for i, block in enumerate(self.blocks):\n"
    "            x = checkpoint(block, x, use_reentrant={reentrant}) if {test} else block(x)\n"
    "        return {out}\n")

WRONG = {
    "ex07-1": [
        ("def optimizer_state_bytes(optimizer):  # counts numbers, not bytes\n"
         "    return sum(t.numel() for state in optimizer.state.values()\n"
         "               for t in state.values() if torch.is_tensor(t))\n",
         "SGD+momentum keeps one float32 (4 bytes) per parameter"),
        ("def optimizer_state_bytes(optimizer):  # the parameters, not the state\n"
         "    return sum(p.numel() * p.element_size()\n"
         "               for group in optimizer.param_groups for p in group['params'])\n",
         "Adam keeps two float32 (8 bytes) per parameter"),
        ("def optimizer_state_bytes(optimizer):  # only the first entry of each state\n"
         "    total = 0\n"
         "    for state in optimizer.state.values():\n"
         "        first = next(iter(state.values()))\n"
         "        total += first.numel() * first.element_size()\n"
         "    return total\n",
         "Adam keeps two float32 (8 bytes) per parameter"),
    ],
    "ex07-2": [
        ("def accumulate(model, xs, ys, micro_sizes):  # forgot to divide\n"
         "    for xp, yp in zip(xs.split(micro_sizes), ys.split(micro_sizes)):\n"
         "        F.cross_entropy(model(xp), yp).backward()\n",
         "split [8, 8, 8, 8] gives a different gradient (4.00x the full batch's norm)"),
        ("def accumulate(model, xs, ys, micro_sizes):  # mean of the micro-batch means\n"
         "    for xp, yp in zip(xs.split(micro_sizes), ys.split(micro_sizes)):\n"
         "        (F.cross_entropy(model(xp), yp) / len(micro_sizes)).backward()\n",
         "split [20, 7, 5] gives a different gradient"),
        ("def accumulate(model, xs, ys, micro_sizes):  # zeroes the gradient every micro-batch\n"
         "    for xp, yp in zip(xs.split(micro_sizes), ys.split(micro_sizes)):\n"
         "        model.zero_grad()\n"
         "        (F.cross_entropy(model(xp), yp, reduction='sum') / len(xs)).backward()\n",
         "split [8, 8, 8, 8] gives a different gradient"),
        ("def accumulate(model, xs, ys, micro_sizes):  # one backward over the summed losses\n"
         "    loss = sum(F.cross_entropy(model(xp), yp, reduction='sum')\n"
         "               for xp, yp in zip(xs.split(micro_sizes), ys.split(micro_sizes)))\n"
         "    (loss / len(xs)).backward()\n",
         "split [8, 8, 8, 8]: one backward() per micro-batch, got 1"),
        ("def accumulate(model, xs, ys, micro_sizes):  # skips the micro-batches altogether\n"
         "    F.cross_entropy(model(xs), ys).backward()\n",
         "run forward on each micro-batch; sizes seen [32]"),
    ],
    "ex07-3": [
        (_EVERY_OTHER.format(reentrant=False, test="i % 2 == 1", out="self.head(x)"),
         "forward runs per block [1, 2, 1, 2, 1, 2]"),
        (_EVERY_OTHER.format(reentrant=True, test="i % 2 == 0", out="self.head(x)"),
         "no gradient reached ['blocks.0.0.weight', 'blocks.0.0.bias']"),
        ("class CheckpointEveryOther(Blocks):  # the parent's switch: checkpoints every block\n"
         "    def __init__(self):\n"
         "        super().__init__(use_checkpoint=True)\n",
         "forward runs per block [2, 2, 2, 2, 2, 2]"),
        (_EVERY_OTHER.format(reentrant=False, test="i % 2 == 0", out="x"),
         "no gradient reached ['head.weight', 'head.bias']"),
    ],
}
