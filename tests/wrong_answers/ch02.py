"""Wrong answers to chapter 02's exercises (see README.md here)."""

WRONG = {
    "ex02-1": [
        ("def pad_with_mask(batch):  # mask True at the padding instead\n"
         "    seqs, labels = zip(*batch)\n"
         "    lens = torch.tensor([len(s) for s in seqs])\n"
         "    padded = nn.utils.rnn.pad_sequence(list(seqs), batch_first=True)\n"
         "    mask = torch.arange(padded.shape[1])[None, :] >= lens[:, None]\n"
         "    return padded, mask, torch.stack(labels)\n",
         "mask counts != sequence lengths"),
        ("def pad_with_mask(batch):  # a float mask of 1s and 0s\n"
         "    seqs, labels = zip(*batch)\n"
         "    lens = torch.tensor([len(s) for s in seqs])\n"
         "    padded = nn.utils.rnn.pad_sequence(list(seqs), batch_first=True)\n"
         "    mask = (torch.arange(padded.shape[1])[None, :] < lens[:, None]).float()\n"
         "    return padded, mask, torch.stack(labels)\n",
         "mask: bool, (batch, longest)"),
        ("def pad_with_mask(batch):  # pads to the global maximum, like pad_to_global_max\n"
         "    padded, lens, labels = pad_to_global_max(batch)\n"
         "    mask = torch.arange(padded.shape[1])[None, :] < lens[:, None]\n"
         "    return padded, mask, labels\n",
         "padded should be (5, "),
        ("def pad_with_mask(batch):  # time-major: forgot batch_first=True\n"
         "    seqs, labels = zip(*batch)\n"
         "    lens = torch.tensor([len(s) for s in seqs])\n"
         "    padded = nn.utils.rnn.pad_sequence(list(seqs))\n"
         "    mask = torch.arange(padded.shape[0])[:, None] < lens[None, :]\n"
         "    return padded, mask, torch.stack(labels)\n",
         "padded should be (5, "),
        ("def pad_with_mask(batch):  # the labels left as a tuple\n"
         "    seqs, labels = zip(*batch)\n"
         "    lens = torch.tensor([len(s) for s in seqs])\n"
         "    padded = nn.utils.rnn.pad_sequence(list(seqs), batch_first=True)\n"
         "    mask = torch.arange(padded.shape[1])[None, :] < lens[:, None]\n"
         "    return padded, mask, labels\n",
         "labels: one tensor of the batch's labels"),
        ("def pad_with_mask(batch):  # 'real' means non-zero\n"
         "    padded, lens, labels = pad_batch(batch)\n"
         "    mask = padded.abs().sum(dim=2) != 0\n"
         "    return padded, mask, labels\n",
         "build the mask from the lengths"),
    ],
    "ex02-2": [
        ("class Squares(Dataset):  # no bounds check\n"
         "    def __init__(self, n):\n"
         "        self.n = n\n"
         "    def __len__(self):\n"
         "        return self.n\n"
         "    def __getitem__(self, index):\n"
         "        return torch.tensor(index), torch.tensor(index * index)\n",
         "data[10] should raise IndexError"),
        ("class Squares(Dataset):  # off by one: index n slips through\n"
         "    def __init__(self, n):\n"
         "        self.n = n\n"
         "    def __len__(self):\n"
         "        return self.n\n"
         "    def __getitem__(self, index):\n"
         "        if index > self.n:\n"
         "            raise IndexError(index)\n"
         "        return torch.tensor(index), torch.tensor(index * index)\n",
         "data[10] should raise IndexError"),
        ("class Squares(Dataset):  # only the upper bound\n"
         "    def __init__(self, n):\n"
         "        self.n = n\n"
         "    def __len__(self):\n"
         "        return self.n\n"
         "    def __getitem__(self, index):\n"
         "        if index >= self.n:\n"
         "            raise IndexError(index)\n"
         "        return torch.tensor(index), torch.tensor(index * index)\n",
         "data[-1] should raise IndexError"),
        ("class Squares(Dataset):  # float tensors, 'ready for a model'\n"
         "    def __init__(self, n):\n"
         "        self.n = n\n"
         "    def __len__(self):\n"
         "        return self.n\n"
         "    def __getitem__(self, index):\n"
         "        if not 0 <= index < self.n:\n"
         "            raise IndexError(index)\n"
         "        return torch.tensor(float(index)), torch.tensor(float(index * index))\n",
         "two int64 tensors"),
        ("class Squares(Dataset):  # one tensor instead of a pair\n"
         "    def __init__(self, n):\n"
         "        self.n = n\n"
         "    def __len__(self):\n"
         "        return self.n\n"
         "    def __getitem__(self, index):\n"
         "        if not 0 <= index < self.n:\n"
         "            raise IndexError(index)\n"
         "        return torch.tensor([index, index * index])\n",
         "a pair (i, i * i)"),
        ("class Squares(Dataset):  # counts from 1\n"
         "    def __init__(self, n):\n"
         "        self.n = n\n"
         "    def __len__(self):\n"
         "        return self.n\n"
         "    def __getitem__(self, index):\n"
         "        if not 0 <= index < self.n:\n"
         "            raise IndexError(index)\n"
         "        return torch.tensor(index + 1), torch.tensor((index + 1) ** 2)\n",
         "item 3 should be (3, 9)"),
    ],
    "ex02-3": [
        ("def reseed_random(worker_id):  # nothing to do: PyTorch seeds the workers\n"
         "    pass\n",
         "batches from the two workers are identical"),
        ("import random\n"
         "\n"
         "def reseed_random(worker_id):  # seeds the global random module, not the dataset's\n"
         "    random.seed(get_worker_info().seed)\n",
         "batches from the two workers are identical"),
        ("import random\n"
         "\n"
         "def reseed_random(worker_id):  # differs per worker, ignores the main seed\n"
         "    get_worker_info().dataset.rng = random.Random(worker_id)\n",
         "the noise should follow the seed"),
        ("import random\n"
         "\n"
         "def reseed_random(worker_id):  # a fresh generator seeded from the OS\n"
         "    get_worker_info().dataset.rng = random.Random()\n",
         "two seeded runs differ"),
    ],
}
