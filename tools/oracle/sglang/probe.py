#!/usr/bin/env python3
"""How far SGLang 0.5.23's scheduler can be driven on a CPU (issue 17, item 4).

Run with the separate environment README.md builds (never needed by CI):

    SGLANG_VENV=.venv-sglang; $SGLANG_VENV/bin/python tools/oracle/sglang/probe.py

It prints one line per stage, OK or where it stopped.  The stages are the
ones a harness like tools/oracle/oracle_core.py would need, in order.
"""

from __future__ import annotations

import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)   # stubs.py, and the stub's torchvision-0.28.0.dist-info for transformers
import stubs  # noqa: E402

stubs.install(["sglang.srt.multimodal", "torchvision"])
TINY = os.path.join(os.path.dirname(HERE), "tiny_model")


def stage(name, f):
    try:
        r = f()
        print(f"OK    {name}")
        return r
    except BaseException as e:  # report, do not stop: a probe
        where = traceback.extract_tb(e.__traceback__)[-1]
        print(f"STOP  {name}: {type(e).__name__}: {str(e).splitlines()[0][:200]} "
              f"({where.filename.split('site-packages/')[-1]}:{where.lineno})")
        return None


def components():
    import torch
    from sglang.srt.mem_cache.allocator.token import TokenToKVPoolAllocator
    from sglang.srt.mem_cache.cache_init_params import CacheInitParams
    from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool, ReqToTokenPool
    from sglang.srt.mem_cache.radix_cache import RadixCache
    r2t = ReqToTokenPool(8, 256, "cpu", False)
    kv = MHATokenToKVPool(64, 1, torch.float32, 1, 4, 1, "cpu", False)
    alloc = TokenToKVPoolAllocator(64, torch.float32, "cpu", kv, False)
    return RadixCache(CacheInitParams(disable=False, req_to_token_pool=r2t, token_to_kv_pool_allocator=alloc,
                                      page_size=1))


def server_args():
    from sglang.srt import runtime_context as rc
    from sglang.srt.server_args import PortArgs, ServerArgs
    sa = ServerArgs(model_path=TINY, device="cpu", skip_tokenizer_init=True, page_size=1,
                    chunked_prefill_size=32, max_prefill_tokens=64, max_running_requests=4,
                    max_total_tokens=256, disable_cuda_graph=True, load_format="dummy",
                    attention_backend="torch_native", sampling_backend="pytorch")
    rc.publish(sa, role="scheduler", ranks=rc.SpawnRanks(world_rank=0, gpu_id=0))
    return sa, PortArgs.init_new(sa)


def scheduler(args):
    from sglang.srt.managers.scheduler import Scheduler
    return Scheduler(*args)


def main() -> int:
    stage("import the scheduling components (schedule_policy, schedule_batch, radix_cache)",
          lambda: __import__("sglang.srt.managers.schedule_policy"))
    stage("build ReqToTokenPool, MHATokenToKVPool, TokenToKVPoolAllocator, RadixCache on cpu", components)
    args = stage("ServerArgs(device='cpu', load_format='dummy') and publish the runtime context", server_args)
    if args is not None:
        stage("Scheduler(server_args, port_args): its model worker on cpu", lambda: scheduler(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
