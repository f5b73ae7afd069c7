"""Not a candidate: defines Model, not ModelNew."""

from torch import nn


class Model(nn.Module):
    pass
