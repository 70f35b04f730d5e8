/-
  GENERATED FILE: do not edit.
  Written by `python -m leangen oracle`; `python -m leangen oracle --check` (make check,
  make lean) fails when the file is not what that command writes now.
  Generator: leangen 0.2.0, reading IR version 1.
  Files read (SHA-256):
    b025de10ab869d30b7f3472ea8dcf92bd76312f781226962d55dffb0feb5f151  tools/oracle/scenarios/alone.ir.json
    50adf856df3869d0052b54511865ec9158e1140396401d38bbaf634503cc9e2f  tools/oracle/scenarios/alone.out.json
    a49671031e75c34682940cb05b6055f002349117297c74b32582eb8ad2f7f0f5  tools/oracle/scenarios/chunked.ir.json
    39d04dfb18d93873dd84b757bedde583808a0c8ac6b5529691cfb5a3f761b1d2  tools/oracle/scenarios/chunked.out.json
    6881200edc8fcc943943c921074469bcd0f27a156841626145391e331568c18c  tools/oracle/scenarios/hol.ir.json
    4197d120bda70e9ac61e5a308b62495132480b9ae749977c12662abb485a72da  tools/oracle/scenarios/hol.out.json
    812ec864c855ad9d8b641dddc6e3e3c6dee3df1e32d8843bc50246eb7a8e9116  tools/oracle/scenarios/longchunk.ir.json
    337e06c3478d0655c5511e120d7f0a1d5a276e2ab7f93f9bee4aae472efaf07c  tools/oracle/scenarios/longchunk.out.json
    a4af5d1b06cbdba66e915a4015d7b98aab35c52e77c70f237e5838de3e4884a2  tools/oracle/scenarios/mixed.ir.json
    7c9b42cf159309fbcdd4c9da773a18f42cbe016faefca1ed93e8c25a90ef635e  tools/oracle/scenarios/mixed.out.json
    cf4564c5547bcd4de133ac2a29b188d958b9cf354a24abebcc51ac6dd1be5bac  tools/oracle/scenarios/preempt.ir.json
    e2e3248bcdcd8b50368668b5ed7197716ea8bc67c1c2eb3fc330d9176c2080a5  tools/oracle/scenarios/preempt.out.json
    f31603b039be3acc4a788a8521678e1d61e8d2e8e53824fa09d9a743a4acd3be  tools/oracle/scenarios/seqcap.ir.json
    468090c00fdc901119aeece7ac33aa0ea2a0618a64a01f01a186a292b4f9793f  tools/oracle/scenarios/seqcap.out.json
    aff8018a75069ce7ab7a8f172c3c9f5566ee7688e30d85db51ad10d1d3714b8b  tools/oracle/traces/cache_evict.ir.json
    54f5509bbd029981eaddb0395c7dcc7749335d414171a5a107e271d73f807ac8  tools/oracle/traces/cache_evict.out.json
    b35b30b6ce1047aeb9d530e0cc59affa9ba76fd4fb3ce235d11194e83cd1b5aa  tools/oracle/traces/cache_trace.ir.json
    e7c20851c2d92f3873ef8b704268abcf9e472f88f37f968fee088aaeb512cc8e  tools/oracle/traces/cache_trace.out.json
    2410de06382ee4fef7e33bd4780f7415b89aab70631028951690f650a2b9de98  tools/oracle/traces/cache_trace2.ir.json
    b126a16a56639c29868e8276b231f45f94a810e4dc25d866a00cea8b244eb5cb  tools/oracle/traces/cache_trace2.out.json
  Never compiled where it was generated: see lean/README.md.
-/
import Serq.Spec.Exec

namespace Serq.Gen.Oracle

open Serq

/-- The program of tools/oracle/scenarios/alone.ir.json (compiled from examples/oracle/vllm_request.sq). -/
def prog_alone : Program :=
  { nattrs := 15,
    nobs := 2,
    pools := [{ cap := 192, block := 8, viaEngine := false, keys := [] },
              { cap := 4, block := 0, viaEngine := true, keys := [] }],
    engine := { budget := (Expr.num 64),
                chunk := (Expr.cond (Expr.bin BinOp.gt (Expr.bin BinOp.add Expr.running (Expr.waiting 1)) (Expr.num 1)) (Expr.num 16) (Expr.num 0)),
                memory := (some 0),
                cost := (Expr.num 1),
                keys := [],
                serveOnly := none,
                admits := true,
                admitOnly := none },
    blocks := [
      -- block 0
      [(Stmt.set 12 (Expr.num 16)),
       (Stmt.set 13 (Expr.num 4)),
       (Stmt.set 14 (Expr.num 0))],
      -- block 1
      [(Stmt.run 1 Mode.plain (Expr.attr 14) none),
       Stmt.turn,
       (Stmt.set 9 (Expr.attr 12)),
       (Stmt.hold [{ pool := 1, units := (Expr.num 1), reserve := none }, { pool := 0, units := (Expr.min (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.bin BinOp.add (Expr.bin BinOp.mul (Expr.num 0) (Expr.min (Expr.cachedIn 0) (Expr.bin BinOp.mul (Expr.floorDiv (Expr.bin BinOp.sub (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.num 1)) (Expr.num 8)) (Expr.num 8)))) Expr.budgetLeft)), reserve := (some (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1)))) }] 2 (some (Expr.bin BinOp.mul (Expr.num 0) (Expr.min (Expr.cachedIn 0) (Expr.bin BinOp.mul (Expr.floorDiv (Expr.bin BinOp.sub (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.num 1)) (Expr.num 8)) (Expr.num 8))))) (some (Expr.bin BinOp.mul (Expr.num 0) (Expr.bin BinOp.sub (Expr.bin BinOp.add (Expr.attr 12) (Expr.attr 13)) (Expr.num 1))))),
       (Stmt.observe 1 Expr.now)],
      -- block 2
      [(Stmt.set 11 (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1)))),
       (Stmt.set 9 (Expr.attr 11)),
       (Stmt.set 10 (Expr.attr 2)),
       (Stmt.run 0 Mode.prefill (Expr.bin BinOp.sub (Expr.attr 11) (Expr.attr 10)) (some 0)),
       (Stmt.branch (Expr.bin BinOp.eq (Expr.attr 11) (Expr.attr 12)) 3 none),
       (Stmt.run 0 Mode.decode (Expr.bin BinOp.sub (Expr.bin BinOp.sub (Expr.attr 13) (Expr.num 1)) (Expr.bin BinOp.sub (Expr.attr 11) (Expr.attr 12))) (some 0))],
      -- block 3
      [(Stmt.observe 0 Expr.now)]],
    init := (some 0),
    main := 1,
    sessions := [{ arrive := 0, attrs := [(12, 150), (13, 4), (14, 0)], turns := [], preset := false }] }

/-- vLLM 0.33.0's scheduler on tools/oracle/scenarios/alone.json (tools/oracle/scenarios/alone.out.json): per request its first, done (a token sampled in step k exists at time k + 1), and the number of preemptions. -/
theorem vllm_alone :
    Serq.Exec.runW prog_alone 700 =
      ([[(0, 3)], [(0, 6)]], 0) := by
  decide +kernel

/-- vLLM 0.33.0's step count on tools/oracle/scenarios/alone.json: the last token's time, plus the call that flushes it. -/
theorem vllm_alone_steps :
    Serq.Exec.steps prog_alone 700 = 7 := by
  decide +kernel

/-- The program of tools/oracle/scenarios/chunked.ir.json (compiled from examples/oracle/vllm_request.sq). -/
def prog_chunked : Program :=
  { nattrs := 15,
    nobs := 2,
    pools := [{ cap := 256, block := 8, viaEngine := false, keys := [] },
              { cap := 4, block := 0, viaEngine := true, keys := [] }],
    engine := { budget := (Expr.num 32),
                chunk := (Expr.cond (Expr.bin BinOp.gt (Expr.bin BinOp.add Expr.running (Expr.waiting 1)) (Expr.num 1)) (Expr.num 0) (Expr.num 0)),
                memory := (some 0),
                cost := (Expr.num 1),
                keys := [],
                serveOnly := none,
                admits := true,
                admitOnly := none },
    blocks := [
      -- block 0
      [(Stmt.set 12 (Expr.num 16)),
       (Stmt.set 13 (Expr.num 4)),
       (Stmt.set 14 (Expr.num 0))],
      -- block 1
      [(Stmt.run 1 Mode.plain (Expr.attr 14) none),
       Stmt.turn,
       (Stmt.set 9 (Expr.attr 12)),
       (Stmt.hold [{ pool := 1, units := (Expr.num 1), reserve := none }, { pool := 0, units := (Expr.min (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.bin BinOp.add (Expr.bin BinOp.mul (Expr.num 0) (Expr.min (Expr.cachedIn 0) (Expr.bin BinOp.mul (Expr.floorDiv (Expr.bin BinOp.sub (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.num 1)) (Expr.num 8)) (Expr.num 8)))) Expr.budgetLeft)), reserve := (some (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1)))) }] 2 (some (Expr.bin BinOp.mul (Expr.num 0) (Expr.min (Expr.cachedIn 0) (Expr.bin BinOp.mul (Expr.floorDiv (Expr.bin BinOp.sub (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.num 1)) (Expr.num 8)) (Expr.num 8))))) (some (Expr.bin BinOp.mul (Expr.num 0) (Expr.bin BinOp.sub (Expr.bin BinOp.add (Expr.attr 12) (Expr.attr 13)) (Expr.num 1))))),
       (Stmt.observe 1 Expr.now)],
      -- block 2
      [(Stmt.set 11 (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1)))),
       (Stmt.set 9 (Expr.attr 11)),
       (Stmt.set 10 (Expr.attr 2)),
       (Stmt.run 0 Mode.prefill (Expr.bin BinOp.sub (Expr.attr 11) (Expr.attr 10)) (some 0)),
       (Stmt.branch (Expr.bin BinOp.eq (Expr.attr 11) (Expr.attr 12)) 3 none),
       (Stmt.run 0 Mode.decode (Expr.bin BinOp.sub (Expr.bin BinOp.sub (Expr.attr 13) (Expr.num 1)) (Expr.bin BinOp.sub (Expr.attr 11) (Expr.attr 12))) (some 0))],
      -- block 3
      [(Stmt.observe 0 Expr.now)]],
    init := (some 0),
    main := 1,
    sessions := [{ arrive := 0, attrs := [(12, 40), (13, 4), (14, 0)], turns := [], preset := false },
                 { arrive := 0, attrs := [(12, 50), (13, 3), (14, 0)], turns := [], preset := false },
                 { arrive := 0, attrs := [(12, 30), (13, 5), (14, 0)], turns := [], preset := false }] }

/-- vLLM 0.33.0's scheduler on tools/oracle/scenarios/chunked.json (tools/oracle/scenarios/chunked.out.json): per request its first, done (a token sampled in step k exists at time k + 1), and the number of preemptions. -/
theorem vllm_chunked :
    Serq.Exec.runW prog_chunked 620 =
      ([[(0, 2), (1, 3), (2, 4)], [(0, 5), (1, 5), (2, 8)]], 0) := by
  decide +kernel

/-- vLLM 0.33.0's step count on tools/oracle/scenarios/chunked.json: the last token's time, plus the call that flushes it. -/
theorem vllm_chunked_steps :
    Serq.Exec.steps prog_chunked 620 = 9 := by
  decide +kernel

/-- The program of tools/oracle/scenarios/hol.ir.json (compiled from examples/oracle/vllm_request.sq). -/
def prog_hol : Program :=
  { nattrs := 15,
    nobs := 2,
    pools := [{ cap := 80, block := 4, viaEngine := false, keys := [] },
              { cap := 4, block := 0, viaEngine := true, keys := [] }],
    engine := { budget := (Expr.num 64),
                chunk := (Expr.cond (Expr.bin BinOp.gt (Expr.bin BinOp.add Expr.running (Expr.waiting 1)) (Expr.num 1)) (Expr.num 0) (Expr.num 0)),
                memory := (some 0),
                cost := (Expr.num 1),
                keys := [],
                serveOnly := none,
                admits := true,
                admitOnly := none },
    blocks := [
      -- block 0
      [(Stmt.set 12 (Expr.num 16)),
       (Stmt.set 13 (Expr.num 4)),
       (Stmt.set 14 (Expr.num 0))],
      -- block 1
      [(Stmt.run 1 Mode.plain (Expr.attr 14) none),
       Stmt.turn,
       (Stmt.set 9 (Expr.attr 12)),
       (Stmt.hold [{ pool := 1, units := (Expr.num 1), reserve := none }, { pool := 0, units := (Expr.min (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.bin BinOp.add (Expr.bin BinOp.mul (Expr.num 0) (Expr.min (Expr.cachedIn 0) (Expr.bin BinOp.mul (Expr.floorDiv (Expr.bin BinOp.sub (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.num 1)) (Expr.num 4)) (Expr.num 4)))) Expr.budgetLeft)), reserve := (some (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1)))) }] 2 (some (Expr.bin BinOp.mul (Expr.num 0) (Expr.min (Expr.cachedIn 0) (Expr.bin BinOp.mul (Expr.floorDiv (Expr.bin BinOp.sub (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.num 1)) (Expr.num 4)) (Expr.num 4))))) (some (Expr.bin BinOp.mul (Expr.num 0) (Expr.bin BinOp.sub (Expr.bin BinOp.add (Expr.attr 12) (Expr.attr 13)) (Expr.num 1))))),
       (Stmt.observe 1 Expr.now)],
      -- block 2
      [(Stmt.set 11 (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1)))),
       (Stmt.set 9 (Expr.attr 11)),
       (Stmt.set 10 (Expr.attr 2)),
       (Stmt.run 0 Mode.prefill (Expr.bin BinOp.sub (Expr.attr 11) (Expr.attr 10)) (some 0)),
       (Stmt.branch (Expr.bin BinOp.eq (Expr.attr 11) (Expr.attr 12)) 3 none),
       (Stmt.run 0 Mode.decode (Expr.bin BinOp.sub (Expr.bin BinOp.sub (Expr.attr 13) (Expr.num 1)) (Expr.bin BinOp.sub (Expr.attr 11) (Expr.attr 12))) (some 0))],
      -- block 3
      [(Stmt.observe 0 Expr.now)]],
    init := (some 0),
    main := 1,
    sessions := [{ arrive := 0, attrs := [(12, 40), (13, 12), (14, 0)], turns := [], preset := false },
                 { arrive := 0, attrs := [(12, 50), (13, 4), (14, 1)], turns := [], preset := false },
                 { arrive := 0, attrs := [(12, 8), (13, 4), (14, 2)], turns := [], preset := false }] }

/-- vLLM 0.33.0's scheduler on tools/oracle/scenarios/hol.json (tools/oracle/scenarios/hol.out.json): per request its first, done (a token sampled in step k exists at time k + 1), and the number of preemptions. -/
theorem vllm_hol :
    Serq.Exec.runW prog_hol 566 =
      ([[(0, 1), (1, 13), (2, 13)], [(0, 12), (1, 16), (2, 16)]], 0) := by
  decide +kernel

/-- vLLM 0.33.0's step count on tools/oracle/scenarios/hol.json: the last token's time, plus the call that flushes it. -/
theorem vllm_hol_steps :
    Serq.Exec.steps prog_hol 566 = 17 := by
  decide +kernel

/-- The program of tools/oracle/scenarios/longchunk.ir.json (compiled from examples/oracle/vllm_request.sq). -/
def prog_longchunk : Program :=
  { nattrs := 15,
    nobs := 2,
    pools := [{ cap := 320, block := 8, viaEngine := false, keys := [] },
              { cap := 4, block := 0, viaEngine := true, keys := [] }],
    engine := { budget := (Expr.num 64),
                chunk := (Expr.cond (Expr.bin BinOp.gt (Expr.bin BinOp.add Expr.running (Expr.waiting 1)) (Expr.num 1)) (Expr.num 16) (Expr.num 0)),
                memory := (some 0),
                cost := (Expr.num 1),
                keys := [],
                serveOnly := none,
                admits := true,
                admitOnly := none },
    blocks := [
      -- block 0
      [(Stmt.set 12 (Expr.num 16)),
       (Stmt.set 13 (Expr.num 4)),
       (Stmt.set 14 (Expr.num 0))],
      -- block 1
      [(Stmt.run 1 Mode.plain (Expr.attr 14) none),
       Stmt.turn,
       (Stmt.set 9 (Expr.attr 12)),
       (Stmt.hold [{ pool := 1, units := (Expr.num 1), reserve := none }, { pool := 0, units := (Expr.min (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.bin BinOp.add (Expr.bin BinOp.mul (Expr.num 0) (Expr.min (Expr.cachedIn 0) (Expr.bin BinOp.mul (Expr.floorDiv (Expr.bin BinOp.sub (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.num 1)) (Expr.num 8)) (Expr.num 8)))) Expr.budgetLeft)), reserve := (some (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1)))) }] 2 (some (Expr.bin BinOp.mul (Expr.num 0) (Expr.min (Expr.cachedIn 0) (Expr.bin BinOp.mul (Expr.floorDiv (Expr.bin BinOp.sub (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.num 1)) (Expr.num 8)) (Expr.num 8))))) (some (Expr.bin BinOp.mul (Expr.num 0) (Expr.bin BinOp.sub (Expr.bin BinOp.add (Expr.attr 12) (Expr.attr 13)) (Expr.num 1))))),
       (Stmt.observe 1 Expr.now)],
      -- block 2
      [(Stmt.set 11 (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1)))),
       (Stmt.set 9 (Expr.attr 11)),
       (Stmt.set 10 (Expr.attr 2)),
       (Stmt.run 0 Mode.prefill (Expr.bin BinOp.sub (Expr.attr 11) (Expr.attr 10)) (some 0)),
       (Stmt.branch (Expr.bin BinOp.eq (Expr.attr 11) (Expr.attr 12)) 3 none),
       (Stmt.run 0 Mode.decode (Expr.bin BinOp.sub (Expr.bin BinOp.sub (Expr.attr 13) (Expr.num 1)) (Expr.bin BinOp.sub (Expr.attr 11) (Expr.attr 12))) (some 0))],
      -- block 3
      [(Stmt.observe 0 Expr.now)]],
    init := (some 0),
    main := 1,
    sessions := [{ arrive := 0, attrs := [(12, 60), (13, 3), (14, 0)], turns := [], preset := false },
                 { arrive := 0, attrs := [(12, 50), (13, 3), (14, 0)], turns := [], preset := false },
                 { arrive := 0, attrs := [(12, 40), (13, 3), (14, 0)], turns := [], preset := false }] }

/-- vLLM 0.33.0's scheduler on tools/oracle/scenarios/longchunk.json (tools/oracle/scenarios/longchunk.out.json): per request its first, done (a token sampled in step k exists at time k + 1), and the number of preemptions. -/
theorem vllm_longchunk :
    Serq.Exec.runW prog_longchunk 728 =
      ([[(0, 4), (1, 4), (2, 3)], [(0, 6), (1, 6), (2, 5)]], 0) := by
  decide +kernel

/-- vLLM 0.33.0's step count on tools/oracle/scenarios/longchunk.json: the last token's time, plus the call that flushes it. -/
theorem vllm_longchunk_steps :
    Serq.Exec.steps prog_longchunk 728 = 7 := by
  decide +kernel

/-- The program of tools/oracle/scenarios/mixed.ir.json (compiled from examples/oracle/vllm_request.sq). -/
def prog_mixed : Program :=
  { nattrs := 15,
    nobs := 2,
    pools := [{ cap := 156, block := 4, viaEngine := false, keys := [] },
              { cap := 4, block := 0, viaEngine := true, keys := [] }],
    engine := { budget := (Expr.num 48),
                chunk := (Expr.cond (Expr.bin BinOp.gt (Expr.bin BinOp.add Expr.running (Expr.waiting 1)) (Expr.num 1)) (Expr.num 16) (Expr.num 0)),
                memory := (some 0),
                cost := (Expr.num 1),
                keys := [],
                serveOnly := none,
                admits := true,
                admitOnly := none },
    blocks := [
      -- block 0
      [(Stmt.set 12 (Expr.num 16)),
       (Stmt.set 13 (Expr.num 4)),
       (Stmt.set 14 (Expr.num 0))],
      -- block 1
      [(Stmt.run 1 Mode.plain (Expr.attr 14) none),
       Stmt.turn,
       (Stmt.set 9 (Expr.attr 12)),
       (Stmt.hold [{ pool := 1, units := (Expr.num 1), reserve := none }, { pool := 0, units := (Expr.min (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.bin BinOp.add (Expr.bin BinOp.mul (Expr.num 0) (Expr.min (Expr.cachedIn 0) (Expr.bin BinOp.mul (Expr.floorDiv (Expr.bin BinOp.sub (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.num 1)) (Expr.num 4)) (Expr.num 4)))) Expr.budgetLeft)), reserve := (some (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1)))) }] 2 (some (Expr.bin BinOp.mul (Expr.num 0) (Expr.min (Expr.cachedIn 0) (Expr.bin BinOp.mul (Expr.floorDiv (Expr.bin BinOp.sub (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.num 1)) (Expr.num 4)) (Expr.num 4))))) (some (Expr.bin BinOp.mul (Expr.num 0) (Expr.bin BinOp.sub (Expr.bin BinOp.add (Expr.attr 12) (Expr.attr 13)) (Expr.num 1))))),
       (Stmt.observe 1 Expr.now)],
      -- block 2
      [(Stmt.set 11 (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1)))),
       (Stmt.set 9 (Expr.attr 11)),
       (Stmt.set 10 (Expr.attr 2)),
       (Stmt.run 0 Mode.prefill (Expr.bin BinOp.sub (Expr.attr 11) (Expr.attr 10)) (some 0)),
       (Stmt.branch (Expr.bin BinOp.eq (Expr.attr 11) (Expr.attr 12)) 3 none),
       (Stmt.run 0 Mode.decode (Expr.bin BinOp.sub (Expr.bin BinOp.sub (Expr.attr 13) (Expr.num 1)) (Expr.bin BinOp.sub (Expr.attr 11) (Expr.attr 12))) (some 0))],
      -- block 3
      [(Stmt.observe 0 Expr.now)]],
    init := (some 0),
    main := 1,
    sessions := [{ arrive := 0, attrs := [(12, 50), (13, 20), (14, 0)], turns := [], preset := false },
                 { arrive := 0, attrs := [(12, 33), (13, 30), (14, 0)], turns := [], preset := false },
                 { arrive := 0, attrs := [(12, 60), (13, 12), (14, 3)], turns := [], preset := false },
                 { arrive := 0, attrs := [(12, 20), (13, 25), (14, 6)], turns := [], preset := false },
                 { arrive := 0, attrs := [(12, 40), (13, 8), (14, 9)], turns := [], preset := false },
                 { arrive := 0, attrs := [(12, 12), (13, 16), (14, 15)], turns := [], preset := false }] }

/-- vLLM 0.33.0's scheduler on tools/oracle/scenarios/mixed.json (tools/oracle/scenarios/mixed.out.json): per request its first, done (a token sampled in step k exists at time k + 1), and the number of preemptions. -/
theorem vllm_mixed :
    Serq.Exec.runW prog_mixed 1423 =
      ([[(0, 4), (1, 3), (2, 7), (3, 25), (4, 35), (5, 33)], [(0, 23), (1, 32), (2, 37), (3, 52), (4, 42), (5, 50)]], 4) := by
  decide +kernel

/-- vLLM 0.33.0's step count on tools/oracle/scenarios/mixed.json: the last token's time, plus the call that flushes it. -/
theorem vllm_mixed_steps :
    Serq.Exec.steps prog_mixed 1423 = 53 := by
  decide +kernel

/-- The program of tools/oracle/scenarios/preempt.ir.json (compiled from examples/oracle/vllm_request.sq). -/
def prog_preempt : Program :=
  { nattrs := 15,
    nobs := 2,
    pools := [{ cap := 32, block := 4, viaEngine := false, keys := [] },
              { cap := 4, block := 0, viaEngine := true, keys := [] }],
    engine := { budget := (Expr.num 16),
                chunk := (Expr.cond (Expr.bin BinOp.gt (Expr.bin BinOp.add Expr.running (Expr.waiting 1)) (Expr.num 1)) (Expr.num 0) (Expr.num 0)),
                memory := (some 0),
                cost := (Expr.num 1),
                keys := [],
                serveOnly := none,
                admits := true,
                admitOnly := none },
    blocks := [
      -- block 0
      [(Stmt.set 12 (Expr.num 16)),
       (Stmt.set 13 (Expr.num 4)),
       (Stmt.set 14 (Expr.num 0))],
      -- block 1
      [(Stmt.run 1 Mode.plain (Expr.attr 14) none),
       Stmt.turn,
       (Stmt.set 9 (Expr.attr 12)),
       (Stmt.hold [{ pool := 1, units := (Expr.num 1), reserve := none }, { pool := 0, units := (Expr.min (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.bin BinOp.add (Expr.bin BinOp.mul (Expr.num 0) (Expr.min (Expr.cachedIn 0) (Expr.bin BinOp.mul (Expr.floorDiv (Expr.bin BinOp.sub (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.num 1)) (Expr.num 4)) (Expr.num 4)))) Expr.budgetLeft)), reserve := (some (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1)))) }] 2 (some (Expr.bin BinOp.mul (Expr.num 0) (Expr.min (Expr.cachedIn 0) (Expr.bin BinOp.mul (Expr.floorDiv (Expr.bin BinOp.sub (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.num 1)) (Expr.num 4)) (Expr.num 4))))) (some (Expr.bin BinOp.mul (Expr.num 0) (Expr.bin BinOp.sub (Expr.bin BinOp.add (Expr.attr 12) (Expr.attr 13)) (Expr.num 1))))),
       (Stmt.observe 1 Expr.now)],
      -- block 2
      [(Stmt.set 11 (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1)))),
       (Stmt.set 9 (Expr.attr 11)),
       (Stmt.set 10 (Expr.attr 2)),
       (Stmt.run 0 Mode.prefill (Expr.bin BinOp.sub (Expr.attr 11) (Expr.attr 10)) (some 0)),
       (Stmt.branch (Expr.bin BinOp.eq (Expr.attr 11) (Expr.attr 12)) 3 none),
       (Stmt.run 0 Mode.decode (Expr.bin BinOp.sub (Expr.bin BinOp.sub (Expr.attr 13) (Expr.num 1)) (Expr.bin BinOp.sub (Expr.attr 11) (Expr.attr 12))) (some 0))],
      -- block 3
      [(Stmt.observe 0 Expr.now)]],
    init := (some 0),
    main := 1,
    sessions := [{ arrive := 0, attrs := [(12, 13), (13, 10), (14, 0)], turns := [], preset := false },
                 { arrive := 0, attrs := [(12, 15), (13, 8), (14, 1)], turns := [], preset := false }] }

/-- vLLM 0.33.0's scheduler on tools/oracle/scenarios/preempt.json (tools/oracle/scenarios/preempt.out.json): per request its first, done (a token sampled in step k exists at time k + 1), and the number of preemptions. -/
theorem vllm_preempt :
    Serq.Exec.runW prog_preempt 273 =
      ([[(0, 1), (1, 2)], [(0, 10), (1, 17)]], 1) := by
  decide +kernel

/-- vLLM 0.33.0's step count on tools/oracle/scenarios/preempt.json: the last token's time, plus the call that flushes it. -/
theorem vllm_preempt_steps :
    Serq.Exec.steps prog_preempt 273 = 18 := by
  decide +kernel

/-- The program of tools/oracle/scenarios/seqcap.ir.json (compiled from examples/oracle/vllm_request.sq). -/
def prog_seqcap : Program :=
  { nattrs := 15,
    nobs := 2,
    pools := [{ cap := 320, block := 8, viaEngine := false, keys := [] },
              { cap := 2, block := 0, viaEngine := true, keys := [] }],
    engine := { budget := (Expr.num 128),
                chunk := (Expr.cond (Expr.bin BinOp.gt (Expr.bin BinOp.add Expr.running (Expr.waiting 1)) (Expr.num 1)) (Expr.num 0) (Expr.num 0)),
                memory := (some 0),
                cost := (Expr.num 1),
                keys := [],
                serveOnly := none,
                admits := true,
                admitOnly := none },
    blocks := [
      -- block 0
      [(Stmt.set 12 (Expr.num 16)),
       (Stmt.set 13 (Expr.num 4)),
       (Stmt.set 14 (Expr.num 0))],
      -- block 1
      [(Stmt.run 1 Mode.plain (Expr.attr 14) none),
       Stmt.turn,
       (Stmt.set 9 (Expr.attr 12)),
       (Stmt.hold [{ pool := 1, units := (Expr.num 1), reserve := none }, { pool := 0, units := (Expr.min (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.bin BinOp.add (Expr.bin BinOp.mul (Expr.num 0) (Expr.min (Expr.cachedIn 0) (Expr.bin BinOp.mul (Expr.floorDiv (Expr.bin BinOp.sub (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.num 1)) (Expr.num 8)) (Expr.num 8)))) Expr.budgetLeft)), reserve := (some (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1)))) }] 2 (some (Expr.bin BinOp.mul (Expr.num 0) (Expr.min (Expr.cachedIn 0) (Expr.bin BinOp.mul (Expr.floorDiv (Expr.bin BinOp.sub (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.num 1)) (Expr.num 8)) (Expr.num 8))))) (some (Expr.bin BinOp.mul (Expr.num 0) (Expr.bin BinOp.sub (Expr.bin BinOp.add (Expr.attr 12) (Expr.attr 13)) (Expr.num 1))))),
       (Stmt.observe 1 Expr.now)],
      -- block 2
      [(Stmt.set 11 (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1)))),
       (Stmt.set 9 (Expr.attr 11)),
       (Stmt.set 10 (Expr.attr 2)),
       (Stmt.run 0 Mode.prefill (Expr.bin BinOp.sub (Expr.attr 11) (Expr.attr 10)) (some 0)),
       (Stmt.branch (Expr.bin BinOp.eq (Expr.attr 11) (Expr.attr 12)) 3 none),
       (Stmt.run 0 Mode.decode (Expr.bin BinOp.sub (Expr.bin BinOp.sub (Expr.attr 13) (Expr.num 1)) (Expr.bin BinOp.sub (Expr.attr 11) (Expr.attr 12))) (some 0))],
      -- block 3
      [(Stmt.observe 0 Expr.now)]],
    init := (some 0),
    main := 1,
    sessions := [{ arrive := 0, attrs := [(12, 20), (13, 6), (14, 0)], turns := [], preset := false },
                 { arrive := 0, attrs := [(12, 16), (13, 3), (14, 0)], turns := [], preset := false },
                 { arrive := 0, attrs := [(12, 24), (13, 4), (14, 0)], turns := [], preset := false },
                 { arrive := 0, attrs := [(12, 10), (13, 5), (14, 1)], turns := [], preset := false }] }

/-- vLLM 0.33.0's scheduler on tools/oracle/scenarios/seqcap.json (tools/oracle/scenarios/seqcap.out.json): per request its first, done (a token sampled in step k exists at time k + 1), and the number of preemptions. -/
theorem vllm_seqcap :
    Serq.Exec.runW prog_seqcap 449 =
      ([[(0, 1), (1, 1), (2, 4), (3, 7)], [(0, 6), (1, 3), (2, 7), (3, 11)]], 0) := by
  decide +kernel

/-- vLLM 0.33.0's step count on tools/oracle/scenarios/seqcap.json: the last token's time, plus the call that flushes it. -/
theorem vllm_seqcap_steps :
    Serq.Exec.steps prog_seqcap 449 = 12 := by
  decide +kernel

/-- The program of tools/oracle/traces/cache_evict.ir.json (compiled from examples/replay/vllm_replay.sq). -/
def prog_cache_evict : Program :=
  { nattrs := 16,
    nobs := 4,
    pools := [{ cap := 120, block := 4, viaEngine := false, keys := [] },
              { cap := 4, block := 0, viaEngine := true, keys := [] }],
    engine := { budget := (Expr.num 64),
                chunk := (Expr.cond (Expr.bin BinOp.gt (Expr.bin BinOp.add Expr.running (Expr.waiting 1)) (Expr.num 1)) (Expr.num 0) (Expr.num 0)),
                memory := (some 0),
                cost := (Expr.num 1),
                keys := [],
                serveOnly := none,
                admits := true,
                admitOnly := none },
    blocks := [
      -- block 0
      [(Stmt.set 13 (Expr.num 0)),
       (Stmt.set 14 (Expr.bin BinOp.mul (Expr.attr 0) (Expr.num 3)))],
      -- block 1
      [(Stmt.run 1 Mode.plain (Expr.attr 14) none),
       (Stmt.loop 2)],
      -- block 2
      [Stmt.turn,
       (Stmt.set 15 (Expr.bin BinOp.add (Expr.attr 13) (Expr.attr 4))),
       (Stmt.observe 0 Expr.now),
       (Stmt.set 9 (Expr.attr 15)),
       (Stmt.set 10 (Expr.num 0)),
       (Stmt.hold [{ pool := 1, units := (Expr.num 1), reserve := none }, { pool := 0, units := (Expr.min (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.bin BinOp.add (Expr.cond (Expr.attr 8) (Expr.num 0) (Expr.min (Expr.cachedIn 0) (Expr.bin BinOp.mul (Expr.floorDiv (Expr.bin BinOp.sub (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.num 1)) (Expr.num 4)) (Expr.num 4)))) Expr.budgetLeft)), reserve := (some (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1)))) }] 3 (some (Expr.cond (Expr.attr 8) (Expr.num 0) (Expr.min (Expr.cachedIn 0) (Expr.bin BinOp.mul (Expr.floorDiv (Expr.bin BinOp.sub (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.num 1)) (Expr.num 4)) (Expr.num 4))))) (some (Expr.bin BinOp.sub (Expr.bin BinOp.add (Expr.attr 15) (Expr.attr 5)) (Expr.num 1)))),
       (Stmt.observe 3 Expr.now),
       (Stmt.branch (Expr.attr 7) 6 (some 7))],
      -- block 3
      [(Stmt.set 12 (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1)))),
       (Stmt.set 9 (Expr.attr 12)),
       (Stmt.set 11 (Expr.attr 2)),
       (Stmt.set 10 (Expr.bin BinOp.add (Expr.attr 10) (Expr.num 1))),
       (Stmt.branch (Expr.bin BinOp.eq (Expr.attr 10) (Expr.num 1)) 4 none),
       (Stmt.run 0 Mode.prefill (Expr.bin BinOp.sub (Expr.attr 12) (Expr.attr 11)) (some 0)),
       (Stmt.branch (Expr.bin BinOp.eq (Expr.attr 12) (Expr.attr 15)) 5 none),
       (Stmt.run 0 Mode.decode (Expr.bin BinOp.sub (Expr.bin BinOp.sub (Expr.attr 5) (Expr.num 1)) (Expr.bin BinOp.sub (Expr.attr 12) (Expr.attr 15))) (some 0))],
      -- block 4
      [(Stmt.observe 1 (Expr.attr 11))],
      -- block 5
      [(Stmt.observe 2 Expr.now)],
      -- block 6
      [(Stmt.set 13 (Expr.bin BinOp.add (Expr.bin BinOp.add (Expr.attr 13) (Expr.attr 4)) (Expr.attr 5))),
       (Stmt.run 2 Mode.plain (Expr.attr 6) none)],
      -- block 7
      [Stmt.stop]],
    init := (some 0),
    main := 1,
    sessions := [{ arrive := 0, attrs := [(14, 0)], turns := [[(4, 40), (5, 5), (6, 12), (8, 0), (7, 1)], [(4, 8), (5, 4), (6, 0), (8, 0), (7, 0)]], preset := true },
                 { arrive := 0, attrs := [(14, 3)], turns := [[(4, 80), (5, 12), (6, 2), (8, 0), (7, 1)], [(4, 6), (5, 3), (6, 0), (8, 0), (7, 0)]], preset := true },
                 { arrive := 0, attrs := [(14, 30)], turns := [[(4, 10), (5, 4), (6, 1), (8, 0), (7, 1)], [(4, 10), (5, 4), (6, 0), (8, 0), (7, 0)]], preset := true }] }

/-- vLLM 0.33.0's scheduler on tools/oracle/traces/cache_evict.json (tools/oracle/traces/cache_evict.out.json): per session and turn its sent, cached_tokens, first, done. -/
theorem vllm_cache_evict :
    (Serq.Exec.runW prog_cache_evict 2579).1 =
      [[(0, 0), (0, 17), (1, 3), (1, 20), (2, 30), (2, 35)], [(0, 0), (0, 28), (1, 0), (1, 64), (2, 0), (2, 12)], [(0, 1), (0, 19), (1, 7), (1, 23), (2, 31), (2, 36)], [(0, 5), (0, 22), (1, 18), (1, 25), (2, 34), (2, 39)]] := by
  decide +kernel

/-- vLLM 0.33.0's step count on tools/oracle/traces/cache_evict.json: the last token's time, plus the call that flushes it. -/
theorem vllm_cache_evict_steps :
    Serq.Exec.steps prog_cache_evict 2579 = 40 := by
  decide +kernel

/-- The program of tools/oracle/traces/cache_trace.ir.json (compiled from examples/replay/vllm_replay.sq). -/
def prog_cache_trace : Program :=
  { nattrs := 16,
    nobs := 4,
    pools := [{ cap := 512, block := 8, viaEngine := false, keys := [] },
              { cap := 4, block := 0, viaEngine := true, keys := [] }],
    engine := { budget := (Expr.num 64),
                chunk := (Expr.cond (Expr.bin BinOp.gt (Expr.bin BinOp.add Expr.running (Expr.waiting 1)) (Expr.num 1)) (Expr.num 0) (Expr.num 0)),
                memory := (some 0),
                cost := (Expr.num 1),
                keys := [],
                serveOnly := none,
                admits := true,
                admitOnly := none },
    blocks := [
      -- block 0
      [(Stmt.set 13 (Expr.num 0)),
       (Stmt.set 14 (Expr.bin BinOp.mul (Expr.attr 0) (Expr.num 3)))],
      -- block 1
      [(Stmt.run 1 Mode.plain (Expr.attr 14) none),
       (Stmt.loop 2)],
      -- block 2
      [Stmt.turn,
       (Stmt.set 15 (Expr.bin BinOp.add (Expr.attr 13) (Expr.attr 4))),
       (Stmt.observe 0 Expr.now),
       (Stmt.set 9 (Expr.attr 15)),
       (Stmt.set 10 (Expr.num 0)),
       (Stmt.hold [{ pool := 1, units := (Expr.num 1), reserve := none }, { pool := 0, units := (Expr.min (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.bin BinOp.add (Expr.cond (Expr.attr 8) (Expr.num 0) (Expr.min (Expr.cachedIn 0) (Expr.bin BinOp.mul (Expr.floorDiv (Expr.bin BinOp.sub (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.num 1)) (Expr.num 8)) (Expr.num 8)))) Expr.budgetLeft)), reserve := (some (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1)))) }] 3 (some (Expr.cond (Expr.attr 8) (Expr.num 0) (Expr.min (Expr.cachedIn 0) (Expr.bin BinOp.mul (Expr.floorDiv (Expr.bin BinOp.sub (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.num 1)) (Expr.num 8)) (Expr.num 8))))) (some (Expr.bin BinOp.sub (Expr.bin BinOp.add (Expr.attr 15) (Expr.attr 5)) (Expr.num 1)))),
       (Stmt.observe 3 Expr.now),
       (Stmt.branch (Expr.attr 7) 6 (some 7))],
      -- block 3
      [(Stmt.set 12 (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1)))),
       (Stmt.set 9 (Expr.attr 12)),
       (Stmt.set 11 (Expr.attr 2)),
       (Stmt.set 10 (Expr.bin BinOp.add (Expr.attr 10) (Expr.num 1))),
       (Stmt.branch (Expr.bin BinOp.eq (Expr.attr 10) (Expr.num 1)) 4 none),
       (Stmt.run 0 Mode.prefill (Expr.bin BinOp.sub (Expr.attr 12) (Expr.attr 11)) (some 0)),
       (Stmt.branch (Expr.bin BinOp.eq (Expr.attr 12) (Expr.attr 15)) 5 none),
       (Stmt.run 0 Mode.decode (Expr.bin BinOp.sub (Expr.bin BinOp.sub (Expr.attr 5) (Expr.num 1)) (Expr.bin BinOp.sub (Expr.attr 12) (Expr.attr 15))) (some 0))],
      -- block 4
      [(Stmt.observe 1 (Expr.attr 11))],
      -- block 5
      [(Stmt.observe 2 Expr.now)],
      -- block 6
      [(Stmt.set 13 (Expr.bin BinOp.add (Expr.bin BinOp.add (Expr.attr 13) (Expr.attr 4)) (Expr.attr 5))),
       (Stmt.run 2 Mode.plain (Expr.attr 6) none)],
      -- block 7
      [Stmt.stop]],
    init := (some 0),
    main := 1,
    sessions := [{ arrive := 0, attrs := [(14, 0)], turns := [[(4, 40), (5, 6), (6, 4), (8, 0), (7, 1)], [(4, 12), (5, 5), (6, 2), (8, 0), (7, 1)], [(4, 20), (5, 4), (6, 0), (8, 0), (7, 0)]], preset := true },
                 { arrive := 0, attrs := [(14, 2)], turns := [[(4, 25), (5, 9), (6, 0), (8, 0), (7, 1)], [(4, 7), (5, 3), (6, 6), (8, 0), (7, 1)], [(4, 30), (5, 6), (6, 0), (8, 0), (7, 0)]], preset := true },
                 { arrive := 0, attrs := [(14, 5)], turns := [[(4, 60), (5, 4), (6, 3), (8, 0), (7, 1)], [(4, 1), (5, 8), (6, 0), (8, 0), (7, 0)]], preset := true }] }

/-- vLLM 0.33.0's scheduler on tools/oracle/traces/cache_trace.json (tools/oracle/traces/cache_trace.out.json): per session and turn its sent, cached_tokens, first, done. -/
theorem vllm_cache_trace :
    (Serq.Exec.runW prog_cache_trace 3264).1 =
      [[(0, 0), (0, 10), (0, 17), (1, 2), (1, 11), (1, 20), (2, 5), (2, 12)], [(0, 0), (0, 40), (0, 56), (1, 0), (1, 32), (1, 40), (2, 0), (2, 56)], [(0, 1), (0, 11), (0, 18), (1, 3), (1, 12), (1, 21), (2, 6), (2, 13)], [(0, 6), (0, 15), (0, 21), (1, 11), (1, 14), (1, 26), (2, 9), (2, 20)]] := by
  decide +kernel

/-- vLLM 0.33.0's step count on tools/oracle/traces/cache_trace.json: the last token's time, plus the call that flushes it. -/
theorem vllm_cache_trace_steps :
    Serq.Exec.steps prog_cache_trace 3264 = 27 := by
  decide +kernel

/-- The program of tools/oracle/traces/cache_trace2.ir.json (compiled from examples/replay/vllm_replay.sq). -/
def prog_cache_trace2 : Program :=
  { nattrs := 16,
    nobs := 4,
    pools := [{ cap := 640, block := 16, viaEngine := false, keys := [] },
              { cap := 3, block := 0, viaEngine := true, keys := [] }],
    engine := { budget := (Expr.num 96),
                chunk := (Expr.cond (Expr.bin BinOp.gt (Expr.bin BinOp.add Expr.running (Expr.waiting 1)) (Expr.num 1)) (Expr.num 32) (Expr.num 0)),
                memory := (some 0),
                cost := (Expr.num 1),
                keys := [],
                serveOnly := none,
                admits := true,
                admitOnly := none },
    blocks := [
      -- block 0
      [(Stmt.set 13 (Expr.num 0)),
       (Stmt.set 14 (Expr.bin BinOp.mul (Expr.attr 0) (Expr.num 3)))],
      -- block 1
      [(Stmt.run 1 Mode.plain (Expr.attr 14) none),
       (Stmt.loop 2)],
      -- block 2
      [Stmt.turn,
       (Stmt.set 15 (Expr.bin BinOp.add (Expr.attr 13) (Expr.attr 4))),
       (Stmt.observe 0 Expr.now),
       (Stmt.set 9 (Expr.attr 15)),
       (Stmt.set 10 (Expr.num 0)),
       (Stmt.hold [{ pool := 1, units := (Expr.num 1), reserve := none }, { pool := 0, units := (Expr.min (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.bin BinOp.add (Expr.cond (Expr.attr 8) (Expr.num 0) (Expr.min (Expr.cachedIn 0) (Expr.bin BinOp.mul (Expr.floorDiv (Expr.bin BinOp.sub (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.num 1)) (Expr.num 16)) (Expr.num 16)))) Expr.budgetLeft)), reserve := (some (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1)))) }] 3 (some (Expr.cond (Expr.attr 8) (Expr.num 0) (Expr.min (Expr.cachedIn 0) (Expr.bin BinOp.mul (Expr.floorDiv (Expr.bin BinOp.sub (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1))) (Expr.num 1)) (Expr.num 16)) (Expr.num 16))))) (some (Expr.bin BinOp.sub (Expr.bin BinOp.add (Expr.attr 15) (Expr.attr 5)) (Expr.num 1)))),
       (Stmt.observe 3 Expr.now),
       (Stmt.branch (Expr.attr 7) 6 (some 7))],
      -- block 3
      [(Stmt.set 12 (Expr.max (Expr.attr 9) (Expr.bin BinOp.add (Expr.attr 3) (Expr.num 1)))),
       (Stmt.set 9 (Expr.attr 12)),
       (Stmt.set 11 (Expr.attr 2)),
       (Stmt.set 10 (Expr.bin BinOp.add (Expr.attr 10) (Expr.num 1))),
       (Stmt.branch (Expr.bin BinOp.eq (Expr.attr 10) (Expr.num 1)) 4 none),
       (Stmt.run 0 Mode.prefill (Expr.bin BinOp.sub (Expr.attr 12) (Expr.attr 11)) (some 0)),
       (Stmt.branch (Expr.bin BinOp.eq (Expr.attr 12) (Expr.attr 15)) 5 none),
       (Stmt.run 0 Mode.decode (Expr.bin BinOp.sub (Expr.bin BinOp.sub (Expr.attr 5) (Expr.num 1)) (Expr.bin BinOp.sub (Expr.attr 12) (Expr.attr 15))) (some 0))],
      -- block 4
      [(Stmt.observe 1 (Expr.attr 11))],
      -- block 5
      [(Stmt.observe 2 Expr.now)],
      -- block 6
      [(Stmt.set 13 (Expr.bin BinOp.add (Expr.bin BinOp.add (Expr.attr 13) (Expr.attr 4)) (Expr.attr 5))),
       (Stmt.run 2 Mode.plain (Expr.attr 6) none)],
      -- block 7
      [Stmt.stop]],
    init := (some 0),
    main := 1,
    sessions := [{ arrive := 0, attrs := [(14, 0)], turns := [[(4, 100), (5, 12), (6, 5), (8, 0), (7, 1)], [(4, 40), (5, 10), (6, 5), (8, 0), (7, 1)], [(4, 24), (5, 6), (6, 0), (8, 0), (7, 0)]], preset := true },
                 { arrive := 0, attrs := [(14, 1)], turns := [[(4, 70), (5, 20), (6, 1), (8, 0), (7, 1)], [(4, 15), (5, 5), (6, 0), (8, 0), (7, 1)], [(4, 50), (5, 8), (6, 0), (8, 0), (7, 0)]], preset := true },
                 { arrive := 0, attrs := [(14, 3)], turns := [[(4, 33), (5, 31), (6, 2), (8, 0), (7, 1)], [(4, 0), (5, 4), (6, 2), (8, 0), (7, 1)], [(4, 16), (5, 16), (6, 0), (8, 0), (7, 0)]], preset := true },
                 { arrive := 0, attrs := [(14, 8)], turns := [[(4, 128), (5, 3), (6, 10), (8, 0), (7, 1)], [(4, 64), (5, 3), (6, 0), (8, 0), (7, 0)]], preset := true }] }

/-- vLLM 0.33.0's scheduler on tools/oracle/traces/cache_trace2.json (tools/oracle/traces/cache_trace2.out.json): per session and turn its sent, cached_tokens, first, done. -/
theorem vllm_cache_trace2 :
    (Serq.Exec.runW prog_cache_trace2 11359).1 =
      [[(0, 0), (0, 18), (0, 35), (1, 1), (1, 24), (1, 29), (2, 3), (2, 37), (2, 43), (3, 8), (3, 29)], [(0, 0), (0, 96), (0, 160), (1, 0), (1, 80), (1, 96), (2, 0), (2, 48), (2, 64), (3, 0), (3, 128)], [(0, 2), (0, 21), (0, 36), (1, 4), (1, 25), (1, 32), (2, 5), (2, 38), (2, 44), (3, 17), (3, 32)], [(0, 13), (0, 30), (0, 41), (1, 23), (1, 29), (1, 39), (2, 35), (2, 41), (2, 59), (3, 19), (3, 34)]] := by
  decide +kernel

/-- vLLM 0.33.0's step count on tools/oracle/traces/cache_trace2.json: the last token's time, plus the call that flushes it. -/
theorem vllm_cache_trace2_steps :
    Serq.Exec.steps prog_cache_trace2 11359 = 60 := by
  decide +kernel

end Serq.Gen.Oracle
