"""Wrong answers to chapter 08's exercises (see README.md here)."""

_REMAINING = (
    "from helpers import digits_split\n"
    "\n"
    "def remaining_targets(epoch, start):\n"
    "    train, _ = digits_split(seed=0)\n"
    "    return [y for _, y in {batches}]\n")

_CLEAN = (
    "def clean_keys(state_dict):\n"
    "    cleaned = {{}}\n"
    "    for key, value in state_dict.items():\n"
    "{body}"
    "    return cleaned\n")

WRONG = {
    "ex08-1": [
        ("def restore_rng(state):  # forgets NumPy\n"
         "    torch.set_rng_state(state['torch'])\n"
         "    random.setstate(state['python'])\n",
         "NumPy draws differ after restore_rng(state)"),
        ("def restore_rng(state):  # forgets Python's random\n"
         "    torch.set_rng_state(state['torch'])\n"
         "    name, keys, *rest = state['numpy']\n"
         "    np.random.set_state((name, keys.numpy().astype(np.uint32), *rest))\n",
         "Python's random draws differ after restore_rng(state)"),
        ("def restore_rng(state):  # seeds again instead of restoring the state\n"
         "    set_seed(0)\n",
         "torch draws differ after restore_rng(state)"),
        ("def restore_rng(state):  # takes the state apart: it cannot be restored twice\n"
         "    torch.set_rng_state(state.pop('torch'))\n"
         "    random.setstate(state.pop('python'))\n"
         "    name, keys, *rest = state.pop('numpy')\n"
         "    np.random.set_state((name, keys.numpy().astype(np.uint32), *rest))\n",
         "restore_rng changed the state it was given"),
    ],
    "ex08-2": [
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
    "ex08-3": [
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
    "ex08-4": [
        (_CLEAN.format(body="        # each prefix once, in one order\n"
                            "        name = key.removeprefix('_orig_mod.')"
                            ".removeprefix('module.')\n"
                            "        cleaned[name] = value\n"),
         "should become ['calls', 'body.0.weight'], got ['_orig_mod.calls'"),
        (_CLEAN.format(body="        # replace removes the prefixes inside a key too\n"
                            "        cleaned[key.replace('_orig_mod.', '').replace('module.', '')]"
                            " = value\n"),
         "['body.module.w'] should become ['body.module.w'], got ['body.w']"),
        (_CLEAN.format(body="        # lstrip removes characters, not a prefix\n"
                            "        name = key.lstrip('_orig_mod.').lstrip('module.')\n"
                            "        cleaned[name] = value\n"),
         "should become ['calls', 'body.0.weight'], got ['_orig_mod.calls'"),
        (_CLEAN.format(body="        # a collision silently keeps the last value\n"
                            "        name = key\n"
                            "        while name.startswith(('_orig_mod.', 'module.')):\n"
                            "            name = name.split('.', 1)[1]\n"
                            "        cleaned[name] = value\n"),
         "'module.w' and 'w' both become 'w': raise ValueError"),
    ],
}
