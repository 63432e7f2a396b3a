"""The TorchScript form of a mimic net: its encoding (standardisation, one-hot by dictionary
lookup) and a copy of the net in one scriptable module. Imported only when exporting (it needs
torch at import time)."""

import copy

import numpy as np
import torch


class ScriptedMimic(torch.nn.Module):
    """``forward(numeric, categorical)``: ``numeric`` a double tensor ``(n, n_numeric)`` (shape
    ``(n, 0)`` when there are no numeric columns), ``categorical`` one list of n strings per
    categorical column (an unseen string is an all-zero block); NaN marks a missing numeric cell
    and ``""`` a missing categorical one, as in the ONNX graph; returns float probabilities
    (``(n,)`` predicted values for a regression mimic).
    ``numeric_columns``, ``categorical_columns`` and ``classes`` describe the inputs and
    outputs."""

    numeric_columns: list[str]
    categorical_columns: list[str]
    classes: list[str]
    regression: bool
    target: list[float]
    lookups: list[dict[str, int]]
    widths: list[int]
    indicators: list[int]

    def __init__(self, mimic) -> None:
        super().__init__()
        enc = mimic.encoding_
        self.numeric_columns = list(enc.numeric)
        self.categorical_columns = list(enc.categorical)
        self.regression = mimic.regression
        self.classes = [] if self.regression else [str(c) for c in mimic.classes_]
        self.target = [mimic.target_mean_, mimic.target_scale_] if self.regression else [0.0, 1.0]
        blocks = [enc.block_categories(j) for j in range(len(enc.categorical))]
        self.lookups = [{c: i for i, c in enumerate(cats)} for cats in blocks]
        self.widths = [len(cats) for cats in blocks]
        self.indicators = list(enc.indicators)
        self.register_buffer("mean", torch.from_numpy(enc.mean.astype(np.float64)))
        self.register_buffer("scale", torch.from_numpy(enc.scale.astype(np.float64)))
        self.net = copy.deepcopy(mimic.module_).float().eval().requires_grad_(False)

    def forward(self, numeric: torch.Tensor, categorical: list[list[str]]) -> torch.Tensor:
        n = numeric.shape[0]
        missing = torch.isnan(numeric)
        scaled = (numeric - self.mean) / self.scale
        blocks = [torch.where(missing, torch.zeros_like(scaled), scaled).float()]
        if len(self.indicators) > 0:
            columns = torch.tensor(self.indicators, dtype=torch.long)
            blocks.append(missing.index_select(1, columns).float())
        for j, lookup in enumerate(self.lookups):
            codes = torch.tensor([lookup.get(v, -1) for v in categorical[j]], dtype=torch.long)
            hot = codes.unsqueeze(1) == torch.arange(self.widths[j]).unsqueeze(0)
            blocks.append(hot.float().reshape(n, self.widths[j]))
        out = self.net(torch.cat(blocks, 1))
        if self.regression:  # predicted values (n,) in the target's units
            return out[:, 0].double() * self.target[1] + self.target[0]  # 1e9 +- 10: double
        return torch.softmax(out, 1)
