"""Wrong answers to chapter 04's exercises (see README.md here)."""

_NORMS = 'norms = [r["grad_norm"] for r in read_metrics(baseline) if "grad_norm" in r]\n'
_RIGHT_MEANS = (
    _NORMS
    + "per_epoch = len(DataLoader(train_set, batch_size=32))\n"
    "mean_grad_norm_by_epoch = [float(np.mean(norms[e * per_epoch:(e + 1) * per_epoch]))\n"
    "                           for e in range(Config().epochs)]\n"
)

WRONG = {
    "ex04-1": [
        ("def same_weights(a, b):  # close is not identical\n"
         "    return all(torch.allclose(p, q, atol=1e-6)\n"
         "               for p, q in zip(a.parameters(), b.parameters()))\n",
         "a change of 1e-7 is a different model"),
        ("def same_weights(a, b):  # values only: zip stops at the shorter model\n"
         "    return all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))\n",
         "compare the parameter names too"),
        ("def same_weights(a, b):  # the printed weights, rounded to 4 decimals\n"
         "    return str(a.state_dict()) == str(b.state_dict())\n",
         "a change of 1e-7 is a different model"),
        ("def same_weights(a, b):  # dict equality compares tensors with ==\n"
         "    return a.state_dict() == b.state_dict()\n",
         "is ambiguous"),
        ("def same_weights(a, b):  # the same object, not the same weights\n"
         "    return a is b\n",
         "a deep copy has the same weights"),
        ("def same_weights(a, b):  # the chapter's first solution: equal values, not bits\n"
         "    sa, sb = a.state_dict(), b.state_dict()\n"
         "    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)\n",
         "a weight of 0.0 and one of -0.0 are equal but their bits differ"),
        ("def same_weights(a, b):  # equal values with the same signs: NaN != NaN\n"
         "    sa, sb = a.state_dict(), b.state_dict()\n"
         "    return sa.keys() == sb.keys() and all(\n"
         "        torch.equal(sa[k], sb[k]) and torch.equal(sa[k].signbit(), sb[k].signbit())\n"
         "        for k in sa)\n",
         "yet NaN != NaN"),
        ("def same_weights(a, b):  # values, signs and NaNs, but not the dtype\n"
         "    sa, sb = a.state_dict(), b.state_dict()\n"
         "    return sa.keys() == sb.keys() and all(\n"
         "        torch.equal(sa[k].signbit(), sb[k].signbit())\n"
         "        and bool(((sa[k] == sb[k]) | (sa[k].isnan() & sb[k].isnan())).all())\n"
         "        for k in sa)\n",
         "compare the dtypes too"),
    ],
    "ex04-2": [
        ('def best_run(root):  # the answer the chapter printed\n'
         '    return "baseline"\n',
         "you returned 'baseline', not 'm'"),
        ("def best_run(root):  # the alphabetically first run\n"
         "    return sorted(run.name for run in Path(root).iterdir())[0]\n",
         "you returned 'a', not 'm'"),
        ("def best_run(root):  # the final accuracy, not the best one\n"
         "    scores = {run.name: json.loads((run / 'final.json').read_text())['val_accuracy']\n"
         "              for run in Path(root).iterdir()}\n"
         "    return max(scores, key=scores.get)\n",
         "you returned 'z', not 'm'"),
        ("def best_run(root):  # min for max\n"
         "    scores = {run.name: json.loads((run / 'final.json').read_text())"
         "['best_val_accuracy']\n"
         "              for run in Path(root).iterdir()}\n"
         "    return min(scores, key=scores.get)\n",
         "'baseline' has the highest best_val_accuracy"),
        ("def best_run(root):  # the run's directory, not its name\n"
         "    runs = [run for run in Path(root).iterdir() if (run / 'final.json').exists()]\n"
         "    return max(runs, key=lambda run: json.loads((run / 'final.json').read_text())"
         "['best_val_accuracy'])\n",
         "return the run's name (a str), not PosixPath"),
    ],
    "ex04-3": [
        (_NORMS
         + "mean_grad_norm_by_epoch = [float(np.mean(norms))] * Config().epochs\n"
         "grad_norm_falls = False\n",
         "every epoch has the same value"),
        (_NORMS
         + "per_epoch = len(train_set) // 32  # floor: the last, partial batch forgotten\n"
         "mean_grad_norm_by_epoch = [float(np.mean(norms[e * per_epoch:(e + 1) * per_epoch]))\n"
         "                           for e in range(Config().epochs)]\n"
         "grad_norm_falls = mean_grad_norm_by_epoch[-1] < mean_grad_norm_by_epoch[0]\n",
         "are off: epoch e is the e-th block"),
        (_NORMS
         + "# one row per step and one column per epoch? (the reshape goes the other way)\n"
         "mean_grad_norm_by_epoch = np.array(norms).reshape(-1, Config().epochs).mean(axis=0)\n"
         "grad_norm_falls = bool(mean_grad_norm_by_epoch[-1] < mean_grad_norm_by_epoch[0])\n",
         "are off: epoch e is the e-th block"),
        ("# every row of metrics.jsonl, validation rows counted as a norm of 0\n"
         'norms = [r.get("grad_norm", 0.0) for r in read_metrics(baseline)]\n'
         "per_epoch = len(DataLoader(train_set, batch_size=32))\n"
         "mean_grad_norm_by_epoch = [float(np.mean(norms[e * per_epoch:(e + 1) * per_epoch]))\n"
         "                           for e in range(Config().epochs)]\n"
         "grad_norm_falls = mean_grad_norm_by_epoch[-1] < mean_grad_norm_by_epoch[0]\n",
         "are off: epoch e is the e-th block"),
        (_RIGHT_MEANS
         + "grad_norm_falls = mean_grad_norm_by_epoch[-1] > mean_grad_norm_by_epoch[0]"
         "  # reversed\n",
         "look at your list again"),
        (_RIGHT_MEANS
         + 'grad_norm_falls = "yes"  # a word, not a bool\n',
         "look at your list again"),
    ],
}
