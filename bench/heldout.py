"""cslint on packages nobody tuned it on (#36): runtime ground truth, recall, and a judged sample of findings.

    python bench/heldout.py                        # builds /tmp/cslint-heldout (a venv) the first time
    python bench/heldout.py --only kornia_aug --targets wsc --json rows.json
    python bench/heldout.py --recall rows.json                 # recall, and every site not recalled
    python bench/heldout.py --reachability rows.json           # the misses again, every package function a root
    python bench/heldout.py --sample rows.json --seed 36 --size 64 --tsv docs/heldout-1-sample.tsv
    python bench/heldout.py --score docs/heldout-1-sample.tsv

Held-out set 1: seven PyTorch packages of different kinds, none of them measured or tuned on before (not the
packages of `bench/realcode.py` nor of docs/accuracy.md's tuned tables). Each is installed with `--no-deps`
and only the small dependencies its step imports, against the CPU build of torch 2.13.0. For each tiny
training step below (forward, loss, backward and an optimizer step; random weights, no downloads) and each
target (`wsc`: the lazy-tensor backend, `compile`: dynamo) it runs what `bench/realcode.py` runs, with that
file's matching rule: `cslint runtime` (the ground truth), a line-coverage run, and `cslint check --target`
on the package files the step ran.

`--sample` draws, per target, a seeded random sample of the static findings on those files, stratified by
package, into a TSV whose `verdict` and `reason` columns are filled in by hand (T: the trace really
breaks, syncs or freezes as the message says; F: it does not; U: cannot tell from the code). A sample file
that already has verdicts keeps them for the findings it still draws. `--score` gives precision per target
with a 95% Wilson interval, and the false findings per cause.
Not part of the test suite: it needs the registry for the install and minutes per step.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from realcode import REPO, TORCH, measure_target  # noqa: E402

# Installed with --no-deps: the packages, then the small dependencies their steps import.
PACKAGES = ["kornia==0.9.0", "vector-quantize-pytorch==1.32.0", "x-transformers==2.31.10", "torchmetrics==1.9.0",
            "auraloss==0.4.0", "pytorch-metric-learning==2.9.0", "efficientnet-pytorch==0.7.1"]
DEPENDENCIES = ["kornia-rs==0.2.0", "numpy==2.4.6", "packaging", "einops==0.8.2", "einx==0.4.3", "frozendict",
                "loguru", "torch-einops-utils==0.2.0", "lightning-utilities==0.15.3", "typing_extensions", "scipy",
                "tqdm", "sympy"]
SCOPES = ("kornia", "vector_quantize_pytorch", "x_transformers", "torchmetrics", "auraloss",
          "pytorch_metric_learning", "efficientnet_pytorch")

FACTORIES = r'''
import torch
from cslint.runtime import Step

# The lazy-tensor backend has no autocast dtype: `torch.autocast("lazy", enabled=False)`, which kornia's SSIM
# and x-transformers' rotary embeddings enter, raises "unsupported scalarType" and ends the runtime run there.
# A disabled autocast changes nothing, so on the lazy device it is entered as the CPU's (in the lazy run only:
# dynamo traces autocast's own constructor).
_autocast_init = torch.amp.autocast_mode.autocast.__init__


def _autocast_init_lazy_off(self, device_type, *args, **kwargs):
    enabled = kwargs.get("enabled", args[1] if len(args) > 1 else True)
    _autocast_init(self, "cpu" if device_type == "lazy" and not enabled else device_type, *args, **kwargs)


def _on_lazy_autocast_off_is_cpu(device):
    if torch.device(device).type == "lazy":
        torch.amp.autocast_mode.autocast.__init__ = _autocast_init_lazy_off


def _train_step(model, loss_of, batches):
    """forward + loss + backward + an SGD step, as a training loop runs it."""
    _on_lazy_autocast_off_is_cpu(next(model.parameters()).device)
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=1e-2)

    def step(*batch):
        loss = loss_of(*batch)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.detach()
    return Step(step, batches)


def kornia_aug(device):
    """A GPU augmentation pipeline called from the model's forward, then kornia's losses."""
    import kornia.augmentation as K
    import kornia.color
    import kornia.filters
    import kornia.losses
    torch.manual_seed(0)
    aug = K.AugmentationSequential(K.RandomResizedCrop((16, 16), p=1.0), K.RandomHorizontalFlip(),
                                   K.RandomAffine(degrees=10.0, p=1.0), K.RandomPerspective(0.3, p=1.0),
                                   K.ColorJitter(0.1, 0.1, 0.1, 0.1, p=1.0), K.RandomGrayscale(p=0.5),
                                   K.RandomGaussianBlur((3, 3), (0.1, 2.0), p=1.0),
                                   K.RandomMotionBlur(3, 35.0, 0.5, p=1.0), K.RandomErasing(p=1.0))
    net = torch.nn.Conv2d(3, 3, 3, padding=1).to(device)
    images = torch.rand(2, 3, 16, 16, device=device)

    def loss_of(x):
        x = aug(x)
        y = net(x)
        edges = kornia.filters.sobel(y).mean()
        lab = kornia.color.rgb_to_lab(y.sigmoid()).mean() * 1e-3
        return (kornia.losses.ssim_loss(y, x, window_size=5) + kornia.losses.total_variation(y).mean() * 1e-3
                + edges + lab + kornia.losses.psnr_loss(y, x, 1.0) * 1e-2)
    return _train_step(net, loss_of, [(images,), (images,)])


def vq(device):
    """A vector-quantised autoencoder: VectorQuantize, ResidualVQ and FSQ in the bottleneck."""
    from vector_quantize_pytorch import FSQ, LFQ, ResidualVQ, VectorQuantize
    torch.manual_seed(0)

    class AE(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = torch.nn.Linear(8, 16)
            self.vq = VectorQuantize(dim=16, codebook_size=32, decay=0.8, commitment_weight=1.0)
            self.rvq = ResidualVQ(dim=16, codebook_size=32, num_quantizers=2)
            self.fsq_in = torch.nn.Linear(16, 3)
            self.fsq = FSQ(levels=[5, 5, 5])
            self.lfq = LFQ(dim=16, codebook_size=16, entropy_loss_weight=0.1)
            self.dec = torch.nn.Linear(3, 8)

        def forward(self, x):
            h = self.enc(x)
            q, _, commit = self.vq(h)
            r, _, rcommit = self.rvq(q)
            f, _ = self.fsq(self.fsq_in(r))
            _, _, entropy = self.lfq(h)
            return self.dec(f), commit.sum() + rcommit.sum() + entropy

    model = AE().to(device).train()
    x = torch.randn(2, 6, 8, device=device)

    def loss_of(x):
        out, aux = model(x)
        return (out - x).pow(2).mean() + aux
    return _train_step(model, loss_of, [(x,), (x,)])


def xtransformers(device):
    """A decoder-only language model with rotary embeddings, trained through the autoregressive wrapper."""
    from x_transformers import AutoregressiveWrapper, Decoder, TransformerWrapper
    torch.manual_seed(0)
    model = AutoregressiveWrapper(TransformerWrapper(num_tokens=64, max_seq_len=16, attn_layers=Decoder(
        dim=32, depth=2, heads=4, rotary_pos_emb=True, attn_dim_head=8))).to(device).train()
    ids = torch.randint(0, 64, (2, 9), device=device)
    mask = torch.ones(2, 9, dtype=torch.bool, device=device)
    mask[1, -2:] = False  # one padded sequence
    return _train_step(model, lambda ids, mask: model(ids, mask=mask), [(ids, mask), (ids, mask)])


def torchmetrics_step(device):
    """Metric objects updated inside the training step, and a functional metric as a loss term."""
    from torchmetrics.classification import MulticlassAccuracy, MulticlassAUROC, MulticlassF1Score
    from torchmetrics.functional.regression import pearson_corrcoef
    from torchmetrics.image import PeakSignalNoiseRatio
    from torchmetrics.functional.image import structural_similarity_index_measure
    from torchmetrics.regression import MeanSquaredError
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Conv2d(3, 3, 3, padding=1)
            self.head = torch.nn.Linear(3 * 16 * 16, 5)

        def forward(self, x):
            y = self.body(x)
            return y, self.head(y.flatten(1))

    model = Net().to(device).train()
    accuracy = MulticlassAccuracy(num_classes=5).to(device)
    mse = MeanSquaredError().to(device)
    f1 = MulticlassF1Score(num_classes=5).to(device)
    auroc = MulticlassAUROC(num_classes=5).to(device)
    psnr = PeakSignalNoiseRatio(data_range=1.0).to(device)
    images = torch.rand(4, 3, 16, 16, device=device)
    labels = torch.randint(0, 5, (4,), device=device)

    def loss_of(x, y):
        recon, logits = model(x)
        accuracy.update(logits, y)
        mse.update(recon, x)
        f1.update(logits, y)
        auroc.update(logits.softmax(-1), y)
        psnr.update(recon, x)
        corr = pearson_corrcoef(recon.flatten(), x.flatten())
        ssim = structural_similarity_index_measure(recon, x, data_range=1.0, kernel_size=5)
        return torch.nn.functional.cross_entropy(logits, y) + (1 - ssim) + (1 - corr)
    return _train_step(model, loss_of, [(images, labels), (images, labels)])


def auraloss_step(device):
    """An audio model trained with multi-resolution STFT and SI-SDR losses."""
    import auraloss
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv1d(1, 4, 5, padding=2), torch.nn.Tanh(),
                                torch.nn.Conv1d(4, 1, 5, padding=2)).to(device)
    stft = auraloss.freq.MultiResolutionSTFTLoss(fft_sizes=[64, 128], hop_sizes=[16, 32], win_lengths=[64, 128])
    sisdr = auraloss.time.SISDRLoss()
    esr = auraloss.time.ESRLoss()
    snr = auraloss.time.SNRLoss()
    single = auraloss.freq.STFTLoss(fft_size=64, hop_size=16, win_length=64, w_phs=0.1)
    audio = torch.randn(2, 1, 512, device=device)

    def loss_of(x):
        y = model(x)
        return stft(y, x) + 0.1 * sisdr(y, x) + esr(y, x) + 0.1 * snr(y, x) + single(y, x)
    return _train_step(model, loss_of, [(audio,), (audio,)])


def metric_learning(device):
    """An embedding network trained with a mined triplet loss, contrastive losses and a proxy loss."""
    from pytorch_metric_learning import losses, miners
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8)).to(device)
    miner = miners.MultiSimilarityMiner(epsilon=0.1)
    triplet = losses.TripletMarginLoss(margin=0.1)
    proxy = losses.ProxyAnchorLoss(num_classes=4, embedding_size=8).to(device)
    ntxent = losses.NTXentLoss(temperature=0.1)
    contrastive = losses.ContrastiveLoss()
    circle = losses.CircleLoss()
    x = torch.randn(8, 8, device=device)
    labels = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3], device=device)

    def loss_of(x, y):
        emb = model(x)
        return (triplet(emb, y, miner(emb, y)) + proxy(emb, y) + ntxent(emb, y) + contrastive(emb, y)
                + circle(emb, y))
    both = torch.nn.ModuleList([model, proxy])
    return _train_step(both, loss_of, [(x, labels), (x, labels)])


def efficientnet(device):
    """EfficientNet-B0 built from its name (random weights) with a classification loss."""
    from efficientnet_pytorch import EfficientNet
    torch.manual_seed(0)
    model = EfficientNet.from_name("efficientnet-b0", num_classes=4, image_size=32).to(device).train()
    images = torch.randn(2, 3, 32, 32, device=device)
    labels = torch.tensor([0, 3], device=device)
    return _train_step(model, lambda x, y: torch.nn.functional.cross_entropy(model(x), y), [(images, labels)])
'''

TARGETS = ["kornia_aug", "vq", "xtransformers", "torchmetrics_step", "auraloss_step", "metric_learning",
           "efficientnet"]
PACKAGE_OF = {"kornia_aug": "kornia", "vq": "vector_quantize_pytorch", "xtransformers": "x_transformers",
              "torchmetrics_step": "torchmetrics", "auraloss_step": "auraloss",
              "metric_learning": "pytorch_metric_learning", "efficientnet": "efficientnet_pytorch"}
COLUMNS = ["target", "package", "of", "file", "line", "code", "message", "executed", "verdict", "cause", "reason"]


def ensure_venv(venv: Path) -> Path:
    python = venv / "bin" / "python"
    marker = venv / ".cslint-heldout"
    wanted = " ".join([TORCH, *PACKAGES, *DEPENDENCIES])
    if marker.is_file() and marker.read_text() == wanted:
        return python
    if not python.is_file():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, TORCH], check=True)  # first, alone: the CPU build, not a CUDA one
    subprocess.run([*pip, "--no-deps", *PACKAGES, *DEPENDENCIES], check=True)
    subprocess.run([*pip, "-e", str(REPO)], check=True)
    marker.write_text(wanted)
    return python


def short(path: str) -> str:
    """The path from the package's directory on (`kornia/augmentation/base.py`)."""
    parts = Path(path).parts
    for i, part in enumerate(parts):
        if part in SCOPES:
            return "/".join(parts[i:])
    return path


def measure(args: argparse.Namespace) -> None:
    python = ensure_venv(args.venv)
    work = Path(tempfile.mkdtemp(prefix="cslint-heldout-"))
    factories = work / "factories.py"
    factories.write_text(FACTORIES, encoding="utf-8")
    names = args.only.split(",") if args.only else TARGETS
    rows = json.loads(args.json.read_text()) if args.json and args.json.is_file() else []
    rows = [r for r in rows if not (r["factory"] in names and r["target"] in args.targets.split(","))]
    for target in args.targets.split(","):
        for name in names:
            try:
                row = measure_target(python, factories, name, target, args.timeout, scopes=SCOPES, detail=True)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                row = {"target": target, "factory": name, "error": str(exc)[-800:]}
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k not in ("runtime", "static")}), flush=True)
            if args.json:
                args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    print_recall(rows)


def print_recall(rows: list[dict]) -> None:
    for target in sorted({r["target"] for r in rows}):
        mine = [r for r in rows if r["target"] == target]
        sites = sum(int(r.get("runtime_sites", 0)) for r in mine)
        recalled = sum(int(r.get("recalled", 0)) for r in mine)
        line = sum(int(r.get("same line", 0)) for r in mine)
        static = sum(len(r.get("static", [])) for r in mine)
        failed = [f"{r['factory']} ({r['error'][:80]})" for r in mine if r.get("error")]
        recall = f"{recalled / sites:.2f}" if sites else "n/a"
        print(f"{target}: runtime sites {sites}, recalled {recalled} (recall {recall}), same line other family {line};"
              f" static findings in the files the steps ran {static}"
              + (f"; runtime stopped or failed: {', '.join(failed)}" if failed else ""))
        for r in mine:
            for site in r.get("runtime", []):
                if site["verdict"] != "recalled":
                    print(f"  {site['verdict']}: {short(site['path'])}:{site['line']} {site['code']}")


def reachability(args: argparse.Namespace) -> None:
    """Each missed site again, with every function of the step's package a root (`--trace-roots 'PACKAGE.*'`,
    the files of the row: those with a runtime site or a static finding, and what they import): a miss the
    extra roots turn into a finding of its family (same rule as the recall) is a reachability miss."""
    python = args.venv / "bin" / "python"
    for row in json.loads(args.reachability.read_text()):
        missed = [s for s in row.get("runtime", []) if s["verdict"] != "recalled"]
        if not missed:
            continue
        files = sorted({f["path"] for f in row.get("static", [])} | {s["path"] for s in row["runtime"]})
        out = subprocess.run([str(python), "-m", "cslint", "check", "--no-cache", "--exit-zero", "--target",
                              row["target"], "--output-format", "json", "--trace-roots",
                              f"{PACKAGE_OF[row['factory']]}.*", *files], capture_output=True, text=True)
        families: dict[tuple[str, int], set[str]] = defaultdict(set)
        for f in json.loads(out.stdout):
            families[(str(Path(f["filename"]).resolve()), f["line"])].add(f["code"][:4])
        for site in missed:
            found = any(site["code"][:4] in families[(site["path"], n)]
                        for n in range(site["line"] - 3, site["line"] + 1))
            print(f"{row['target']} {row['factory']}: {'found' if found else 'still missed'} with every function a "
                  f"root: {short(site['path'])}:{site['line']} {site['code']}")


def findings_of(rows: list[dict], target: str) -> list[dict]:
    """The target's static findings, once each (a file two steps ran is linted in both)."""
    seen: dict[tuple[str, int, str], dict] = {}
    for r in rows:
        if r["target"] != target:
            continue
        for f in r.get("static", []):
            key = (short(f["path"]), f["line"], f["code"])
            package = Path(key[0]).parts[0]
            seen.setdefault(key, {"target": target, "package": package, "file": key[0], "line": f["line"],
                                  "code": f["code"], "message": f["message"], "executed": f["executed"]})
    return [seen[k] for k in sorted(seen)]


def sample(args: argparse.Namespace) -> None:
    """Per target, `size` findings stratified by package: each package's findings in a seeded random order,
    taken one per package in turn, so that the packages share the sample equally and a package with fewer
    findings than its share gives them all (the rest of its share goes to the others)."""
    rows = json.loads(args.sample.read_text())
    old = {}
    if args.tsv.is_file():
        with args.tsv.open(encoding="utf-8") as fh:
            old = {(r["target"], r["file"], r["line"], r["code"]): r for r in csv.DictReader(fh, delimiter="\t")}
    out = []
    for target in sorted({r["target"] for r in rows}):
        by_package: dict[str, list[dict]] = defaultdict(list)
        for f in findings_of(rows, target):
            by_package[f["package"]].append(f)
        rng = random.Random(f"{args.seed}-{target}")
        pools = {p: rng.sample(fs, len(fs)) for p, fs in sorted(by_package.items())}
        taken: dict[str, int] = dict.fromkeys(pools, 0)
        while sum(taken.values()) < args.size and any(taken[p] < len(pools[p]) for p in pools):
            for p in sorted(pools):
                if taken[p] < len(pools[p]) and sum(taken.values()) < args.size:
                    taken[p] += 1
        for p in sorted(pools):
            for f in pools[p][:taken[p]]:
                prior = old.get((target, f["file"], str(f["line"]), f["code"]), {})
                out.append({**f, "of": len(pools[p]), "verdict": prior.get("verdict", ""),
                            "cause": prior.get("cause", ""), "reason": prior.get("reason", "")})
    with args.tsv.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, COLUMNS, delimiter="\t", lineterminator="\n")
        writer.writeheader()
        writer.writerows(out)
    print(f"{len(out)} findings -> {args.tsv}")


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (centre - half, centre + half)


def score(args: argparse.Namespace) -> None:
    with args.score.open(encoding="utf-8") as fh:
        judged = list(csv.DictReader(fh, delimiter="\t"))
    for target in sorted({r["target"] for r in judged}):
        mine = [r for r in judged if r["target"] == target and r["verdict"]]
        verdicts = Counter(r["verdict"] for r in mine)
        n, true = len(mine), verdicts["T"]
        low, high = wilson(true, n)
        low_u, high_u = wilson(true + verdicts["U"], n)
        print(f"{target}: judged {n} (T {true}, F {verdicts['F']}, U {verdicts['U']}); precision {true / n:.2f} "
              f"(95% Wilson {low:.2f}-{high:.2f}); counting unclear as true {(true + verdicts['U']) / n:.2f} "
              f"({low_u:.2f}-{high_u:.2f})" if n else f"{target}: nothing judged")
        weighted = 0.0
        population: dict[str, int] = {}
        for package, count in sorted(Counter(r["package"] for r in mine).items()):
            t = sum(1 for r in mine if r["package"] == package and r["verdict"] == "T")
            of = int(next(r["of"] for r in mine if r["package"] == package))
            population[package] = of
            weighted += of * t / count
            print(f"  {package}: {t}/{count} true (of the package's {of} findings)")
        print(f"  weighted by the packages' shares of all {sum(population.values())} findings: "
              f"{weighted / sum(population.values()):.2f}")
        for cause, count in Counter(r["cause"] for r in mine if r["verdict"] == "F").most_common():
            print(f"  false, {cause}: {count}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, default=Path(tempfile.gettempdir()) / "cslint-heldout")
    parser.add_argument("--only", help="comma-separated factories (default: all)")
    parser.add_argument("--targets", default="wsc,compile")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--json", type=Path, help="the rows, with every runtime site and static finding "
                                                  "(rows of other factories already there are kept)")
    parser.add_argument("--recall", type=Path, help="print the recall of a --json file and stop")
    parser.add_argument("--reachability", type=Path, help="lint the missed sites of a --json file again with every "
                                                          "function of the package a root, and stop")
    parser.add_argument("--sample", type=Path, help="draw the judged sample from this --json file and stop")
    parser.add_argument("--seed", type=int, default=36)
    parser.add_argument("--size", type=int, default=64, help="findings judged per target")
    parser.add_argument("--tsv", type=Path, default=REPO / "docs" / "heldout-1-sample.tsv")
    parser.add_argument("--score", type=Path, help="precision of a judged sample TSV and stop")
    args = parser.parse_args()
    if args.recall:
        print_recall(json.loads(args.recall.read_text()))
    elif args.reachability:
        reachability(args)
    elif args.sample:
        sample(args)
    elif args.score:
        score(args)
    else:
        measure(args)


if __name__ == "__main__":
    main()
