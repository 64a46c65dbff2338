"""Wrong answers to chapter 09's exercises (see README.md here)."""

_TOKENS = (
    "class DynamicTokenClassifier(TokenClassifier):\n"
    "    def forward(self, x):\n"
    "        tokens = {tokens}\n"
    "        return self.linear({combine})\n")
_AGREEMENT = (
    "def agreement(a, b, inputs):\n"
    "    with torch.inference_mode():\n"
    "        return {body}\n")
_BGR = (
    "class BGRServingModel(nn.Module):  # {note}\n"
    "    def __init__(self, rgb_model):\n"
    "        super().__init__()\n"
    "        self.rgb_model = rgb_model\n"
    "    def forward(self, bgr_images):\n"
    "        return self.rgb_model({body})\n")

WRONG = {
    "ex09-1": [
        (_TOKENS.format(tokens="self.token.expand(int(x.shape[0]), 1, 12)  # a Python int",
                        combine="torch.cat([tokens, x], dim=1).mean(1)"),
         "the export fixed the batch size to 8"),
        (_TOKENS.format(tokens="torch.cat([self.token] * x.shape[0])  # one copy per sample",
                        combine="torch.cat([tokens, x], dim=1).mean(1)"),
         "the export fixed the batch size to 8"),
        (_TOKENS.format(tokens="self.token.expand(len(x), 1, 12)  # len(): a Python int",
                        combine="torch.cat([tokens, x], dim=1).mean(1)"),
         "the export fixed the batch size to 8"),
        (_TOKENS.format(tokens="self.token.expand(-1, 1, 12)  # -1 keeps the size 1",
                        combine="torch.cat([tokens, x], dim=1).mean(1)"),
         "your model fails on a batch of 8"),
        (_TOKENS.format(tokens="self.token  # (1, 1, 12) broadcasts over any batch",
                        combine="(x + tokens).mean(1)"),
         "on a batch of 8 your model gives other outputs than TokenClassifier"),
    ],
    "ex09-2": [
        ("def agreement(a, b, inputs):  # a shortcut\n"
         "    return 1.0\n",
         "you said 1.0: compare the predicted classes"),
        (_AGREEMENT.format(body="(a(inputs) == b(inputs)).float().mean().item()  # raw scores"),
         "the int8 model should agree on most inputs"),
        (_AGREEMENT.format(body="(a(inputs).argmax(0) == b(inputs).argmax(0)).float().mean()"
                                ".item()  # argmax over the rows"),
         "a model that predicts another class on every other row agrees on 49.9%"),
        (_AGREEMENT.format(body="(a(inputs).argmax(1) == b(inputs).argmax(1)).sum().item()"
                                "  # a count"),
         "return a fraction, a float between 0 and 1: got 3"),
        (_AGREEMENT.format(body="(a(inputs).argmax(1) == b(inputs).argmax(1)).float().mean()"
                                "  # a tensor"),
         "return a fraction, a float between 0 and 1: got tensor("),
    ],
    "ex09-3": [
        (_BGR.format(body="bgr_images.flip(1)", note="the channel axis of NCHW, not of NHWC"),
         "outputs differ from serving's on the RGB images"),
        (_BGR.format(body="bgr_images", note="forgot the conversion"),
         "outputs differ from serving's on the RGB images"),
        (_BGR.format(body="bgr_images.flip(-1).float() / 255", note="scales twice"),
         "outputs differ from serving's on the RGB images"),
        (_BGR.format(body="torch.from_numpy(bgr_images.numpy()[..., ::-1].copy())",
                     note="the OpenCV habit: NumPy"),
         "the exported file gives other outputs than the wrapper"),
    ],
}
