"""Trains a small convolutional network on the handwritten digits set that
scikit-learn ships (digits.csv.gz: 1,797 8x8 images, 64 pixel values 0-16
and the digit per line), read from $NAVETTE_INPUTS, never from
site-packages.

Parameters (environment, as navette.sweep sets them):
  NAVETTE_PARAM_LR     learning rate (default 0.01)
  NAVETTE_PARAM_SEED   seed of the weights and of the batches' order (0)
  TRAIN_EPOCHS         epochs (default 8)
  TRAIN_DATA           the input's name under $NAVETTE_INPUTS (digits.csv.gz)

The model's state is saved in $NAVETTE_CHECKPOINT after every epoch
(written whole, then renamed), with the optimiser's and the random
generators' states: a run stopped after epoch k and resumed goes on from
k + 1 and ends with the same weights and accuracy as one that was never
stopped. On CPU, the same commit, data and seed give the same accuracy.

Outputs in $NAVETTE_OUTPUTS: metrics.json (loss per epoch, test accuracy,
parameters, device) and model.pt (the weights). A data file that is not
the digits set ends the job with "train: FAILED" and the reason, exit 2.
"""

import gzip
import json
import os
import sys
import time

import torch
from torch import nn

# (recipes/steps.py: what the catalogue's scripts share)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import steps  # noqa: E402
steps.NAME = "train"

TEST_SHARE = 0.2  # the last fifth of a fixed shuffle is the test set


def fail(message):
    steps.fail(message)


def load_digits(path):
    """(images N x 1 x 8 x 8 in [0, 1], labels N) from the CSV, checked."""
    try:
        with gzip.open(path, "rt", encoding="ascii") as f:
            rows = [line.strip() for line in f if line.strip()]
    except (OSError, EOFError, UnicodeDecodeError, gzip.BadGzipFile) as e:
        fail("%s is not a gzip-compressed CSV file (%s)" % (path, e))
    pixels, labels = [], []
    for n, row in enumerate(rows, 1):
        cells = row.split(",")
        if len(cells) != 65:
            fail("%s line %d has %d values, not 64 pixels and a label"
                 % (path, n, len(cells)))
        try:
            values = [float(c) for c in cells]
        except ValueError:
            fail("%s line %d holds a value that is not a number" % (path, n))
        label = values[64]
        if label != int(label) or not 0 <= label <= 9:
            fail("%s line %d: label %r is not a digit" % (path, n, label))
        if any(v < 0 or v > 16 for v in values[:64]):
            fail("%s line %d: a pixel is outside 0-16" % (path, n))
        pixels.append(values[:64])
        labels.append(int(label))
    if len(labels) < 100 or len(set(labels)) != 10:
        fail("%s has %d images of %d digits: not the digits set"
             % (path, len(labels), len(set(labels))))
    x = torch.tensor(pixels, dtype=torch.float32).view(-1, 1, 8, 8) / 16.0
    return x, torch.tensor(labels, dtype=torch.long)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2))
        self.head = nn.Sequential(
            nn.Flatten(), nn.Linear(32 * 4 * 4, 64), nn.ReLU(),
            nn.Linear(64, 10))

    def forward(self, x):
        return self.head(self.features(x))


def accuracy(model, x, y, device):
    model.eval()
    with torch.no_grad():
        return (model(x.to(device)).argmax(1).cpu() == y).float().mean().item()


def save_whole(obj, path):
    torch.save(obj, path + ".tmp")
    os.replace(path + ".tmp", path)


def main():
    lr = float(os.environ.get("NAVETTE_PARAM_LR", "0.01"))
    seed = int(os.environ.get("NAVETTE_PARAM_SEED", "0"))
    epochs = int(os.environ.get("TRAIN_EPOCHS", "8"))
    data = os.path.join(os.environ["NAVETTE_INPUTS"],
                        os.environ.get("TRAIN_DATA", "digits.csv.gz"))
    outputs = os.environ["NAVETTE_OUTPUTS"]
    ckpt_dir = os.environ.get("NAVETTE_CHECKPOINT")
    ckpt = os.path.join(ckpt_dir, "state.pt") if ckpt_dir else None
    if not lr > 0 or epochs < 1:
        fail("learning rate %r and epochs %r must be positive" % (lr, epochs))

    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    x, y = load_digits(data)
    split = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))
    n_test = int(len(y) * TEST_SHARE)
    test_idx, train_idx = split[:n_test], split[n_test:]

    torch.manual_seed(seed)
    model = Net().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    order = torch.Generator().manual_seed(seed)
    losses, start = [], 0
    if ckpt and os.path.exists(ckpt):
        state = torch.load(ckpt, map_location=device)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        order.set_state(state["order"])
        torch.set_rng_state(state["rng"])
        losses, start = state["losses"], state["epoch"]
        print("train: resumed after epoch %d" % start, flush=True)
    print("train: lr=%g seed=%d epochs=%d device=%s images=%d"
          % (lr, seed, epochs, device, len(y)), flush=True)

    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(start + 1, epochs + 1):
        began = time.time()
        model.train()
        perm = train_idx[torch.randperm(len(train_idx), generator=order)]
        total, count = 0.0, 0
        for i in range(0, len(perm), 64):
            batch = perm[i:i + 64]
            xb, yb = x[batch].to(device), y[batch].to(device)
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            total += loss.item() * len(batch)
            count += len(batch)
        losses.append(round(total / count, 6))
        if not losses[-1] == losses[-1]:  # NaN: this rate diverges
            fail("the loss is NaN at epoch %d: learning rate %g is too high"
                 % (epoch, lr))
        print("train: epoch %d loss %.4f (%.2fs)"
              % (epoch, losses[-1], time.time() - began), flush=True)
        if ckpt:
            save_whole({"epoch": epoch, "model": model.state_dict(),
                        "optimizer": opt.state_dict(),
                        "order": order.get_state(),
                        "rng": torch.get_rng_state(), "losses": losses},
                       ckpt)

    acc = accuracy(model, x[test_idx], y[test_idx], device)
    metrics = {"lr": lr, "seed": seed, "epochs": epochs, "device": device,
               "train_images": len(train_idx), "test_images": len(test_idx),
               "loss": losses, "test_accuracy": round(acc, 6),
               "torch": torch.__version__}
    with open(os.path.join(outputs, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1, sort_keys=True)
        f.write("\n")
    torch.save(model.state_dict(), os.path.join(outputs, "model.pt"))
    print("train: test accuracy %.4f" % acc, flush=True)


if __name__ == "__main__":
    main()
