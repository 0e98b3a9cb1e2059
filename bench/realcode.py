"""cslint's static findings on real packages against what a runtime trace of the same code does.

    python bench/realcode.py                      # builds /tmp/cslint-realcode (a venv) the first time
    python bench/realcode.py --venv DIR --only llama,lion --json out.json

Installs pinned model libraries (transformers, timm, diffusers) and optimizer packages (pytorch-optimizer,
torch-optimizer, lion-pytorch) with torch 2.13.0 and this checkout of cslint into a scratch virtualenv,
builds small configurations of their models and optimizers, and for each target (`wsc`: the lazy-tensor
backend, `compile`: dynamo) runs:

1. `cslint runtime --backend lazy|dynamo` on a forward/backward step or a few optimizer steps: the ground
   truth (the sites where the trace forces a value, breaks the graph or changes shape);
2. a line-coverage run of the same step on the CPU: which lines of the packages ran;
3. `cslint check --target wsc|compile` (default roots) on the package files the step ran.

Recall is the share of runtime sites (file, line) where the static pass reports a finding of the same
family (WSC1, WSC2, ...) on that line or up to three lines above it (the static pass names the `if` that
creates optimizer state, the runtime the assignment under it; a WSC3 site anywhere in the block of an
`if` with a static WSC3 finding counts too); a finding of another family on the line counts as "same
line". Static findings the runtime did not see are "path not executed" when their line never ran in the
step (a code path this configuration does not take: another attention implementation, a flag left off),
else "wrong" (the line ran and nothing broke: a false alarm, or a runtime backend that does not see that
kind).
Not part of the test suite: it needs the network for the install and minutes per target.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TORCH = "torch==2.13.0"
PACKAGES = ["transformers==5.23.0", "timm==1.0.31", "diffusers==0.42.1", "pytorch-optimizer==4.1.0",
            "torch-optimizer==0.3.0", "lion-pytorch==0.2.5"]
SCOPES = ("transformers", "timm", "diffusers", "pytorch_optimizer", "torch_optimizer", "lion_pytorch")
BACKEND_OF = {"wsc": "lazy", "compile": "dynamo"}
# The runtime checks whose findings are a target's problems: the optimizer-state check runs on the CPU with
# either backend and names the lazy-tensor problem (WSC301/WSC303); under torch.compile the same state is a
# recompile that dynamo's own run reports (WSC703/WSC702), where it sees it.
SEEN_BY = {"wsc": {"lazy", "stability", "optimizer"}, "compile": {"dynamo"}}
NEAR_LINES = 3  # a static finding this many lines above a runtime site of its family names the same problem

# Factories `cslint runtime` calls (one argument: the device). Small configs: a forward and backward, or
# three optimizer steps on a tiny model.
FACTORIES = r'''
import torch
from cslint.runtime import OptimizerStep, Step


def _lm_step(model, vocab, device):
    model = model.to(device).train()
    ids = torch.randint(2, vocab, (2, 8), device=device)
    mask = torch.ones(2, 8, dtype=torch.long, device=device)
    mask[1, -2:] = 0  # one padded sequence, as in a real batch: the mask helpers cannot skip the mask

    def step(input_ids, attention_mask):
        out = model(input_ids=input_ids, attention_mask=attention_mask, labels=input_ids)
        out.loss.backward()
        return out.loss.detach()
    return Step(step, [(ids, mask), (ids, mask)])


def llama(device):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    return _lm_step(LlamaForCausalLM(cfg), 64, device)


def mixtral(device):
    from transformers import MixtralConfig, MixtralForCausalLM
    # the default grouped-matmul experts kernel has no lazy-tensor implementation: the eager loop
    cfg = MixtralConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                        num_local_experts=4, num_experts_per_tok=2, experts_implementation="eager")
    return _lm_step(MixtralForCausalLM(cfg), 64, device)


def gpt2(device):
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=64, n_embd=32, n_layer=2, n_head=4, n_positions=64)
    return _lm_step(GPT2LMHeadModel(cfg), 64, device)


def bert(device):
    from transformers import BertConfig, BertForMaskedLM
    cfg = BertConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                     num_attention_heads=4, max_position_embeddings=64)
    return _lm_step(BertForMaskedLM(cfg), 64, device)


def t5(device):
    from transformers import T5Config, T5ForConditionalGeneration
    cfg = T5Config(vocab_size=64, d_model=32, d_kv=16, d_ff=64, num_layers=1, num_decoder_layers=1, num_heads=2,
                   decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    return _lm_step(T5ForConditionalGeneration(cfg), 64, device)


def whisper(device):
    from transformers import WhisperConfig, WhisperForConditionalGeneration
    cfg = WhisperConfig(vocab_size=64, num_mel_bins=8, d_model=32, encoder_layers=1, decoder_layers=1,
                        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
                        decoder_ffn_dim=64, max_source_positions=16, max_target_positions=16,
                        decoder_start_token_id=0, pad_token_id=0, eos_token_id=1, bos_token_id=0,
                        apply_spec_augment=True, mask_time_prob=0.2, mask_time_length=2, mask_feature_prob=0.2,
                        mask_feature_length=2)
    model = WhisperForConditionalGeneration(cfg).to(device).train()
    features = torch.randn(2, 8, 32, device=device)
    labels = torch.randint(2, 64, (2, 6), device=device)

    def step(input_features, labels):
        out = model(input_features=input_features, labels=labels)
        out.loss.backward()
        return out.loss.detach()
    return Step(step, [(features, labels), (features, labels)])


def _image_step(model, device, size=32):
    model = model.to(device).train()
    images = torch.randn(2, 3, size, size, device=device)

    def step(x):
        loss = model(x).float().pow(2).mean()
        loss.backward()
        return loss.detach()
    return Step(step, [(images,)])


def resnet(device):
    import timm
    return _image_step(timm.create_model("resnet18", pretrained=False, num_classes=10), device)


def vit(device):
    import timm
    return _image_step(timm.create_model("vit_tiny_patch16_224", pretrained=False, num_classes=10, img_size=32,
                                         patch_size=8), device)


def unet(device):
    from diffusers import DDPMScheduler, UNet2DModel
    model = UNet2DModel(sample_size=16, in_channels=3, out_channels=3, layers_per_block=1,
                        block_out_channels=(16, 32), down_block_types=("DownBlock2D", "DownBlock2D"),
                        up_block_types=("UpBlock2D", "UpBlock2D"), norm_num_groups=8).to(device).train()
    scheduler = DDPMScheduler(num_train_timesteps=100)
    clean = torch.randn(2, 3, 16, 16, device=device)
    noise = torch.randn_like(clean)
    timesteps = torch.randint(0, 100, (2,), device=device)

    def step(x, n, t):
        noisy = scheduler.add_noise(x, n, t)
        loss = (model(noisy, t).sample - n).pow(2).mean()
        loss.backward()
        return loss.detach()
    return Step(step, [(clean, noise, timesteps)])


def ddpm(device):
    """Sampling: the denoiser and the scheduler's step, over two timesteps."""
    from diffusers import DDPMScheduler, UNet2DModel
    model = UNet2DModel(sample_size=16, in_channels=3, out_channels=3, layers_per_block=1,
                        block_out_channels=(16, 32), down_block_types=("DownBlock2D", "DownBlock2D"),
                        up_block_types=("UpBlock2D", "UpBlock2D"), norm_num_groups=8).to(device).eval()
    scheduler = DDPMScheduler(num_train_timesteps=100)
    scheduler.set_timesteps(10, device=device)  # the timesteps on the device the step runs on
    sample = torch.randn(1, 3, 16, 16, device=device)

    def step(x, t):
        with torch.no_grad():
            return scheduler.step(model(x, t).sample, t, x).prev_sample
    return Step(step, [(sample, t.to(device)) for t in scheduler.timesteps[-3:]])


def _tiny_params():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    model(torch.randn(4, 8)).pow(2).mean().backward()
    return model.parameters()


def _optimizer_step(opt):
    return OptimizerStep(opt, steps=3)


def lion(device):
    from lion_pytorch import Lion
    return _optimizer_step(Lion(_tiny_params(), lr=1e-4, weight_decay=1e-2))


def adan(device):
    from pytorch_optimizer import Adan
    return _optimizer_step(Adan(_tiny_params(), lr=1e-3))


def adabelief(device):
    from pytorch_optimizer import AdaBelief
    return _optimizer_step(AdaBelief(_tiny_params(), lr=1e-3))


def lamb(device):
    import torch_optimizer
    return _optimizer_step(torch_optimizer.Lamb(_tiny_params(), lr=1e-3))


def radam(device):
    import torch_optimizer
    return _optimizer_step(torch_optimizer.RAdam(_tiny_params(), lr=1e-3))


# The same optimizers' step() traced on the device inside a training step (an OptimizerStep runs only the
# CPU optimizer-state check: its step() is never traced by the lazy backend or dynamo).
def _traced_optimizer_step(make, device):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).to(device)
    opt = make(model.parameters())
    x = torch.randn(4, 8, device=device)

    def step(x):
        model(x).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
    return Step(step, [(x,), (x,), (x,)])


def lion_traced(device):
    from lion_pytorch import Lion
    return _traced_optimizer_step(lambda p: Lion(p, lr=1e-4, weight_decay=1e-2), device)


def adan_traced(device):
    from pytorch_optimizer import Adan
    return _traced_optimizer_step(lambda p: Adan(p, lr=1e-3), device)


def adabelief_traced(device):
    from pytorch_optimizer import AdaBelief
    return _traced_optimizer_step(lambda p: AdaBelief(p, lr=1e-3), device)


def lamb_traced(device):
    import torch_optimizer
    return _traced_optimizer_step(lambda p: torch_optimizer.Lamb(p, lr=1e-3), device)


def radam_traced(device):
    import torch_optimizer
    return _traced_optimizer_step(lambda p: torch_optimizer.RAdam(p, lr=1e-3), device)
'''

# The user's code of a step whose traced entry is not in the packages (the DDPM sampling step is a closure of
# the factory above): the same step as a project writes it, linted with the package files, so that the
# static pass reaches the scheduler from a root as it would in that project (its findings are counted in
# the package files only). It imports the classes from their modules: a run groups a file with the files
# its imports name, and `diffusers/__init__.py`, which re-exports them, did not run in the step.
USER_STEPS = {
    "ddpm": r'''
import torch
from diffusers.models.unets.unet_2d import UNet2DModel
from diffusers.schedulers.scheduling_ddpm import DDPMScheduler

model = UNet2DModel(sample_size=16, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(16, 32),
                    down_block_types=("DownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "UpBlock2D"),
                    norm_num_groups=8).eval()
scheduler = DDPMScheduler(num_train_timesteps=100)


@torch.compile
def sample_step(x, t):
    with torch.no_grad():
        return scheduler.step(model(x, t).sample, t, x).prev_sample
''',
}


# What makes the user's step a root of the row's target: a function torch.compile decorates is checked for
# compile whatever the run's target (docs/targets.md, a target per root), so the lazy-tensor row's step is a
# Cerebras trace, which is only read (the step file is linted, never run).
ROOT_DECORATOR = {"compile": "@torch.compile", "wsc": "@cstorch.trace"}


def user_step(name: str, target: str) -> str:
    """The user's step of `name`, its root decorated for `target`."""
    text = USER_STEPS[name]
    if target == "compile":
        return text
    return text.replace("import torch\n", "import torch\nimport cerebras.pytorch as cstorch\n", 1) \
        .replace("@torch.compile\n", ROOT_DECORATOR[target] + "\n")

# Runs one factory's step once on the CPU and prints the lines of the packages it executed.
COVERAGE = r'''
import json, sys, importlib.util, threading
spec = importlib.util.spec_from_file_location("factories", sys.argv[1])
factories = importlib.util.module_from_spec(spec); spec.loader.exec_module(factories)
scopes = tuple(sys.argv[3].split(","))
ran = {}

def tracer(frame, event, arg):
    path = frame.f_code.co_filename
    if not any(f"/{s}/" in path for s in scopes):
        return None
    lines = ran.setdefault(path, set())
    def local(frame, event, arg):
        if event == "line":
            lines.add(frame.f_lineno)
        return local
    lines.add(frame.f_lineno)
    return local

built = getattr(factories, sys.argv[2])("cpu")
sys.settrace(tracer); threading.settrace(tracer)
try:
    if hasattr(built, "optimizer"):
        for _ in range(built.steps):
            built.optimizer.step()
    else:
        for batch in built.batches:
            built.fn(*batch)
finally:
    sys.settrace(None)
print(json.dumps({path: sorted(lines) for path, lines in ran.items()}))
'''

TARGETS = ["llama", "mixtral", "gpt2", "bert", "t5", "whisper", "resnet", "vit", "unet", "ddpm", "lion", "adan",
           "adabelief", "lamb", "radam"]


def _package_root(path: str, scopes: tuple[str, ...]) -> Path:
    """The directory the packages of `scopes` are installed in (site-packages), from one of their files."""
    parts = Path(path).parts
    index = next(i for i, part in enumerate(parts) if part in scopes)
    return Path(*parts[:index])


def ensure_venv(venv: Path) -> Path:
    python = venv / "bin" / "python"
    marker = venv / ".cslint-realcode"
    wanted = " ".join([TORCH, *PACKAGES])
    if marker.is_file() and marker.read_text() == wanted:
        return python
    if not python.is_file():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, TORCH], check=True)  # first, alone: the CPU build, not a CUDA one
    subprocess.run([*pip, *PACKAGES, TORCH], check=True)
    subprocess.run([*pip, "-e", str(REPO)], check=True)
    _load_torchvision_without_its_ops(python)
    marker.write_text(wanted)
    return python


def _load_torchvision_without_its_ops(python: Path) -> None:
    """timm needs torchvision, and the registry's torchvision for torch 2.13 is a CUDA build: with the CPU
    torch its C++ ops (nms, roi_align) do not load, and registering their fake kernels fails the import
    (`operator torchvision::nms does not exist`). None of the steps measured calls those ops, so the
    registrations are dropped in the scratch venv."""
    if subprocess.run([str(python), "-c", "import torchvision"], capture_output=True).returncode == 0:
        return
    where = subprocess.run([str(python), "-c", "import importlib.util; print(importlib.util.find_spec("
                            "'torchvision').submodule_search_locations[0])"], capture_output=True, text=True,
                           check=True).stdout.strip()
    Path(where, "_meta_registrations.py").write_text('"""Emptied by cslint\'s bench/realcode.py."""\n')
    subprocess.run([str(python), "-c", "import torchvision"], check=True)


def run_json(argv: list[str], timeout: float) -> object:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        command = " ".join(a if "\n" not in a else "<script>" for a in argv[:6])
        raise RuntimeError(f"{command}...: exit {done.returncode}: {done.stderr[-1500:]}") from None


def package_files(python: Path) -> dict[str, Path]:
    out = subprocess.run([str(python), "-c", "import importlib.util, json, sys; print(json.dumps({n: "
                          "str(importlib.util.find_spec(n).submodule_search_locations[0]) for n in sys.argv[1:]}))",
                          *SCOPES], capture_output=True, text=True, check=True)
    return {name: Path(path) for name, path in json.loads(out.stdout).items()}


def measure_target(python: Path, factories: Path, name: str, target: str, timeout: float, *,
                   scopes: tuple[str, ...] = SCOPES, detail: bool = False) -> dict[str, object]:
    """One factory's row. `scopes`: the package directories whose files count; `detail`: the row also lists
    every runtime site with its verdict and every static finding in the files the step ran."""
    report = _runtime(python, factories, name, target, timeout)
    # an optimizer: its state check, and its step() traced in a step
    if f"def {name}_traced(" in factories.read_text(encoding="utf-8"):
        traced = _runtime(python, factories, f"{name}_traced", target, timeout)
        report = {"findings": [*report.get("findings", []), *traced.get("findings", [])],
                  "error": "; ".join(filter(None, [report.get("error", ""), traced.get("error", "")])),
                  "status": {**report.get("status", {}), **traced.get("status", {})}}
    ran = run_json([str(python), "-c", COVERAGE, str(factories), name, ",".join(scopes)], timeout)
    assert isinstance(ran, dict)
    files = sorted(path for path in ran if path.endswith(".py"))
    user = []
    if name in USER_STEPS and files:
        # Beside the installed packages, so that the step and the package files it calls are one project, as
        # a project linting its own copy of them would be: since a run is split by project (2657b3d), a step in
        # another directory has the packages' findings reported at its calls, not in the files this row scores.
        user = [str(_package_root(files[0], scopes) / f"cslint_user_{name}.py")]
        Path(user[0]).write_text(user_step(name, target), encoding="utf-8")
    try:
        static = run_json([str(python), "-m", "cslint", "check", "--no-cache", "--exit-zero", "--target", target,
                           "--output-format", "json", *files, *user], timeout) if files else []
    finally:
        for path in user:
            Path(path).unlink(missing_ok=True)
    static = [f for f in static if str(Path(f["filename"]).resolve()) in {str(Path(p).resolve()) for p in files}]
    assert isinstance(static, list)
    static_sites: dict[tuple[str, int], set[str]] = {}
    for f in static:
        static_sites.setdefault((str(Path(f["filename"]).resolve()), f["line"]), set()).add(f["code"][:4])
    in_scope = set(files)
    sites = {(str(Path(f["path"]).resolve()), f["line"], f["code"][:4]): f["code"] for f in report.get("findings", [])
             if str(Path(f["path"]).resolve()) in in_scope and SEEN_BY[target] & set(f.get("backend", "").split("+"))}
    counts: Counter[str] = Counter()
    listed: dict[str, list[str]] = {}
    seen: set[tuple[str, int]] = set()
    runtime_rows: list[dict[str, object]] = []
    for (path, line, family), code in sorted(sites.items()):
        families = static_sites.get((path, line), set())
        # the static pass may name the statement that leads to the site: `if len(state) == 0:` for the
        # state created on the next line
        near = [(path, n) for n in range(line - NEAR_LINES, line + 1) if family in static_sites.get((path, n), ())]
        if not near and family == "WSC3":  # state created anywhere in the block of the `if` the static pass names
            near = [(path, n) for n in _enclosing_ifs(path, line) if family in static_sites.get((path, n), ())]
        seen.update(near or [(path, line)])
        verdict = "recalled" if near else "same line" if families else "missed"
        counts[verdict] += 1
        runtime_rows.append({"path": path, "line": line, "code": code, "verdict": verdict})
        if verdict != "recalled":
            listed.setdefault(verdict, []).append(f"{_short(path)}:{line} {code}")
    executed = {(str(Path(p).resolve()), line) for p, lines in ran.items() for line in lines}
    for site, families in sorted(static_sites.items()):
        if site not in seen:
            verdict = "static: path not executed" if site not in executed else "static: wrong"
            counts[verdict] += 1
            if verdict == "static: wrong":
                listed.setdefault(verdict, []).append(f"{_short(site[0])}:{site[1]} {','.join(sorted(families))}")
    # a backend run that stopped part-way saw only the lines before it: its silence after them is no verdict
    stopped = [f"{backend}: {status}" for backend, status in report.get("status", {}).items() if status != "complete"]
    error = "; ".join(filter(None, [report.get("error", ""), *stopped]))
    row: dict[str, object] = {"target": target, "factory": name, "runtime_sites": len(sites), "error": error[:300],
                              **counts, "sites": listed}
    if detail:
        row["runtime"] = runtime_rows
        row["static"] = [{"path": str(Path(f["filename"]).resolve()), "line": f["line"], "code": f["code"],
                          "message": f.get("message", ""),
                          "executed": (str(Path(f["filename"]).resolve()), f["line"]) in executed} for f in static]
    return row


def _runtime(python: Path, factories: Path, name: str, target: str, timeout: float) -> dict:
    runtime = run_json([str(python), "-m", "cslint", "runtime", f"{factories}:{name}", "--backend", BACKEND_OF[target],
                        "--no-progress", "--timeout", str(timeout), "--output-format", "json"], timeout + 60)
    report = runtime[0] if isinstance(runtime, list) else runtime
    assert isinstance(report, dict)
    return report


def _enclosing_ifs(path: str, line: int) -> list[int]:
    """The lines of the `if` statements whose body holds `line` (`if len(state) == 0:` above the keys it creates)."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return []
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.If) and node.body
            and node.body[0].lineno <= line <= (node.body[-1].end_lineno or node.lineno)]


def _short(path: str) -> str:
    """The path from the package's directory on (`transformers/models/llama/modeling_llama.py`)."""
    parts = Path(path).parts
    for i, part in enumerate(parts):
        if part in SCOPES:
            return "/".join(parts[i:])
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, default=Path(tempfile.gettempdir()) / "cslint-realcode")
    parser.add_argument("--only", help="comma-separated factories (default: all)")
    parser.add_argument("--targets", default="wsc,compile")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--json", type=Path, help="write the rows here too")
    args = parser.parse_args()
    python = ensure_venv(args.venv)
    work = Path(tempfile.mkdtemp(prefix="cslint-realcode-"))
    factories = work / "factories.py"
    factories.write_text(FACTORIES, encoding="utf-8")
    names = args.only.split(",") if args.only else TARGETS
    rows = []
    for target in args.targets.split(","):
        for name in names:
            try:
                row = measure_target(python, factories, name, target, args.timeout)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                row = {"target": target, "factory": name, "error": str(exc)[-800:]}
            rows.append(row)
            print(json.dumps(row), flush=True)
    for target in args.targets.split(","):
        mine = [r for r in rows if r["target"] == target]
        sites = sum(int(r.get("runtime_sites", 0)) for r in mine)
        recalled = sum(int(r.get("recalled", 0)) for r in mine)
        line = sum(int(r.get("same line", 0)) for r in mine)
        unexecuted = sum(int(r.get("static: path not executed", 0)) for r in mine)
        wrong = sum(int(r.get("static: wrong", 0)) for r in mine)
        recall = f"{recalled / sites:.2f}" if sites else "n/a"
        failed = [r["factory"] for r in mine if r.get("error")]
        print(f"{target}: runtime sites {sites}, recalled {recalled} (recall {recall}), same line other family "
              f"{line}; static-only: path not executed {unexecuted}, wrong {wrong}"
              + (f"; runtime run stopped or failed (no verdict): {', '.join(failed)}" if failed else ""))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
