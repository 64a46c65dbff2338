"""Wrong answers to chapter 07's exercises (see README.md here)."""

_REMAINING = (
    "from helpers import digits_split\n"
    "\n"
    "def remaining_targets(epoch, start):\n"
    "    train, _ = digits_split(seed=0)\n"
    "    return [y for _, y in {batches}]\n")

WRONG = {
    "ex07-1": [
        ("def strip_prefix(state_dict, prefix):  # lstrip removes characters, not a prefix\n"
         "    return {k.lstrip(prefix): v for k, v in state_dict.items()}\n",
         "['a.alpha'] should become ['alpha'], got ['lpha']"),
        ("def strip_prefix(state_dict, prefix):  # replace also removes it inside a key\n"
         "    return {k.replace(prefix, ''): v for k, v in state_dict.items()}\n",
         "['xa.y'] should become ['xa.y'], got ['xy']"),
        ("def strip_prefix(state_dict, prefix):  # cuts every key, prefixed or not\n"
         "    return {k[len(prefix):]: v for k, v in state_dict.items()}\n",
         "['x'] should become ['x'], got ['']"),
        ("def strip_prefix(state_dict, prefix):  # renames the keys of the argument in place\n"
         "    for k in [k for k in state_dict if k.startswith(prefix)]:\n"
         "        state_dict[k[len(prefix):]] = state_dict.pop(k)\n"
         "    return state_dict\n",
         "return a new dict, leave the argument as it was"),
    ],
    "ex07-2": [
        ("def load_backbone(model, state_dict):  # strict=False still refuses other shapes\n"
         "    report = model.load_state_dict(state_dict, strict=False)\n"
         "    return sorted(report.missing_keys)\n",
         "size mismatch for head.weight"),
        ("def load_backbone(model, state_dict):  # returns what it loaded\n"
         "    own = model.state_dict()\n"
         "    fitting = {k: v for k, v in state_dict.items()\n"
         "               if k in own and v.shape == own[k].shape}\n"
         "    model.load_state_dict(fitting, strict=False)\n"
         "    return sorted(fitting)\n",
         "return the sorted names that were not loaded; got ['body.0.bias'"),
        ("def load_backbone(model, state_dict):  # the report's order, not sorted\n"
         "    own = model.state_dict()\n"
         "    fitting = {k: v for k, v in state_dict.items()\n"
         "               if k in own and v.shape == own[k].shape}\n"
         "    return model.load_state_dict(fitting, strict=False).missing_keys\n",
         "got ['head.weight', 'head.bias']"),
        ("def load_backbone(model, state_dict):  # loads into a copy of the model\n"
         "    import copy\n"
         "    model = copy.deepcopy(model)\n"
         "    own = model.state_dict()\n"
         "    fitting = {k: v for k, v in state_dict.items()\n"
         "               if k in own and v.shape == own[k].shape}\n"
         "    model.load_state_dict(fitting, strict=False)\n"
         "    return sorted(set(own) - set(fitting))\n",
         "the body was not loaded"),
    ],
    "ex07-3": [
        (_REMAINING.format(batches="resumable.epoch_batches(train, epoch, seed=0, "
                                   "start=start + 1)"),
         "from batch 5 on, epoch 1 has"),
        (_REMAINING.format(batches="resumable.epoch_batches(train, 0, seed=0, start=start)"),
         "order differs from the epoch's own order"),
        ("import itertools\n"
         "from torch.utils.data import DataLoader\n" +
         _REMAINING.format(batches="itertools.islice(DataLoader(train, batch_size=64, "
                                   "shuffle=True, drop_last=True), start, None)"),
         "order differs from the epoch's own order"),
        (_REMAINING.format(batches="resumable.epoch_batches(digits_split(seed=0)[1], epoch, "
                                   "seed=0, start=start)"),
         "from batch 5 on, epoch 1 has"),
    ],
}
