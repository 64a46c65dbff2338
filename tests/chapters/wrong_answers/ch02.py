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
        ("class TokenBudgetSampler(Sampler):  # batches built once, in __init__\n"
         "    def __init__(self, lengths, max_tokens, generator):\n"
         "        order = torch.randperm(len(lengths), generator=generator).tolist()\n"
         "        self.batches, batch = [], []\n"
         "        for i in sorted(order, key=lambda i: lengths[i]):\n"
         "            if batch and (len(batch) + 1) * lengths[i] > max_tokens:\n"
         "                self.batches.append(batch)\n"
         "                batch = []\n"
         "            batch.append(i)\n"
         "        self.batches.append(batch)\n"
         "        shuffled = torch.randperm(len(self.batches), generator=generator).tolist()\n"
         "        self.batches = [self.batches[b] for b in shuffled]\n"
         "    def __iter__(self):\n"
         "        return iter(self.batches)\n",
         "epoch 2 repeats epoch 1"),
        ("class TokenBudgetSampler(Sampler):  # budget counted with the batch's first length\n"
         "    def __init__(self, lengths, max_tokens, generator):\n"
         "        self.lengths, self.max_tokens, self.generator = lengths, max_tokens, generator\n"
         "    def __iter__(self):\n"
         "        order = torch.randperm(len(self.lengths), generator=self.generator).tolist()\n"
         "        batches, batch = [], []\n"
         "        for i in sorted(order, key=lambda i: self.lengths[i]):\n"
         "            if batch and (len(batch) + 1) * self.lengths[batch[0]] > self.max_tokens:\n"
         "                batches.append(batch)\n"
         "                batch = []\n"
         "            batch.append(i)\n"
         "        batches.append(batch)\n"
         "        for b in torch.randperm(len(batches), generator=self.generator).tolist():\n"
         "            yield batches[b]\n",
         "exceeds max_tokens"),
        ("class TokenBudgetSampler(Sampler):  # fills in shuffled order, never sorts\n"
         "    def __init__(self, lengths, max_tokens, generator):\n"
         "        self.lengths, self.max_tokens, self.generator = lengths, max_tokens, generator\n"
         "    def __iter__(self):\n"
         "        order = torch.randperm(len(self.lengths), generator=self.generator).tolist()\n"
         "        batches, batch, longest = [], [], 0\n"
         "        for i in order:\n"
         "            new_longest = max(longest, self.lengths[i])\n"
         "            if batch and (len(batch) + 1) * new_longest > self.max_tokens:\n"
         "                batches.append(batch)\n"
         "                batch, new_longest = [], self.lengths[i]\n"
         "            batch.append(i)\n"
         "            longest = new_longest\n"
         "        batches.append(batch)\n"
         "        yield from batches\n",
         "too much padding"),
        ("class TokenBudgetSampler(Sampler):  # a fixed batch size that fits the longest\n"
         "    def __init__(self, lengths, max_tokens, generator):\n"
         "        self.lengths, self.generator = lengths, generator\n"
         "        self.size = max_tokens // max(lengths)\n"
         "    def __iter__(self):\n"
         "        order = torch.randperm(len(self.lengths), generator=self.generator).tolist()\n"
         "        by_length = sorted(order, key=lambda i: self.lengths[i])\n"
         "        batches = [by_length[i:i + self.size]\n"
         "                   for i in range(0, len(by_length), self.size)]\n"
         "        for b in torch.randperm(len(batches), generator=self.generator).tolist():\n"
         "            yield batches[b]\n",
         "batches are far below max_tokens"),
        ("class TokenBudgetSampler(Sampler):  # the batch order from torch's global generator\n"
         "    def __init__(self, lengths, max_tokens, generator):\n"
         "        self.lengths, self.max_tokens = lengths, max_tokens\n"
         "    def __iter__(self):\n"
         "        batches, batch = [], []\n"
         "        for i in sorted(range(len(self.lengths)), key=lambda i: self.lengths[i]):\n"
         "            if batch and (len(batch) + 1) * self.lengths[i] > self.max_tokens:\n"
         "                batches.append(batch)\n"
         "                batch = []\n"
         "            batch.append(i)\n"
         "        batches.append(batch)\n"
         "        for b in torch.randperm(len(batches)).tolist():\n"
         "            yield batches[b]\n",
         "equally seeded generators"),
        ("class TokenBudgetSampler(Sampler):  # forgets the last, unfinished batch\n"
         "    def __init__(self, lengths, max_tokens, generator):\n"
         "        self.lengths, self.max_tokens, self.generator = lengths, max_tokens, generator\n"
         "    def __iter__(self):\n"
         "        order = torch.randperm(len(self.lengths), generator=self.generator).tolist()\n"
         "        batches, batch = [], []\n"
         "        for i in sorted(order, key=lambda i: self.lengths[i]):\n"
         "            if batch and (len(batch) + 1) * self.lengths[i] > self.max_tokens:\n"
         "                batches.append(batch)\n"
         "                batch = []\n"
         "            batch.append(i)\n"
         "        for b in torch.randperm(len(batches), generator=self.generator).tolist():\n"
         "            yield batches[b]\n",
         "every index should appear exactly once"),
    ],
}
