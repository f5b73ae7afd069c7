"""ResNet-50 image classification on a fixed batch of synthetic images.

Options: image_size (224), channels_last (on when on the GPU), classes (1000), lr (0.1).
bf16/fp16 run under autocast (fp16 training adds a GradScaler); fp32 runs plain.
Under torchrun training wraps the model in DDP and each rank draws its own images.
"""

from __future__ import annotations

import contextlib

import torch
import torchvision

from addressable.capture import distributed
from addressable.capture.phases import phase
from addressable.capture.workload import Step, WorkloadConfig, WorkloadSpec, check_options

AMP = {"bf16": torch.bfloat16, "fp16": torch.float16}
OPTIONS = ("image_size", "classes", "channels_last", "lr")


def build(cfg: WorkloadConfig) -> Step:
    opt = cfg.options
    check_options(cfg.name, opt, OPTIONS)
    size, classes = int(opt.get("image_size", 224)), int(opt.get("classes", 1000))
    fmt = torch.channels_last if opt.get("channels_last", cfg.device == "cuda") else torch.contiguous_format

    model = torchvision.models.resnet50(weights=None, num_classes=classes).to(cfg.device, memory_format=fmt)
    distributed.seed_data()  # under torchrun each rank draws its own images
    x = torch.randn(cfg.batch, 3, size, size, device=cfg.device).contiguous(memory_format=fmt)
    y = torch.randint(0, classes, (cfg.batch,), device=cfg.device)
    net = model  # step.model: the module whose qualified names name the profile's module scopes
    if cfg.mode == "train":
        model = distributed.ddp(model)  # under torchrun; unchanged in one process
    if cfg.compile:
        model = torch.compile(model)

    def autocast() -> contextlib.AbstractContextManager:
        if cfg.dtype == "fp32":
            return contextlib.nullcontext()
        return torch.autocast(cfg.device, dtype=AMP[cfg.dtype])

    if cfg.mode == "infer":
        model.eval()

        def infer_step() -> None:
            with torch.inference_mode(), phase("forward"), autocast():
                model(x)

        vars(infer_step)["model"] = net  # a step's attributes (vars: mypy types none on a function)
        return infer_step

    model.train()
    loss_fn = torch.nn.CrossEntropyLoss()
    sgd = torch.optim.SGD(model.parameters(), lr=float(opt.get("lr", 0.1)), momentum=0.9)
    scaler = torch.amp.GradScaler(cfg.device, enabled=cfg.dtype == "fp16")

    def train_step() -> None:
        with phase("forward"), autocast():
            loss = loss_fn(model(x), y)
        with phase("backward"):
            scaler.scale(loss).backward()
        with phase("optimizer"):
            scaler.step(sgd)
            scaler.update()
            sgd.zero_grad(set_to_none=True)

    vars(train_step)["model"] = net
    return train_step


WORKLOADS = [
    WorkloadSpec(
        name="resnet50",
        family="cnn",
        description="torchvision ResNet-50, synthetic 224x224 images, SGD momentum; "
        "options: image_size, classes, channels_last, lr",
        build=build,
        default_batch=64,
        options=OPTIONS,
    ),
]
