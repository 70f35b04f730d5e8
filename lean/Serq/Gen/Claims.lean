/-
  GENERATED FILE: do not edit.
  Written by `python -m leangen claims`; `python -m leangen claims --check` (make check,
  make lean) fails when the file is not what that command writes now.
  Generator: leangen 0.2.0, reading IR version 1.
  The IR files read that have claims (SHA-256):
    9cac0f82b605b259e679670d4c9aa03f436feb5dc049fd5fbee639b81bbda8a2  tests/golden/ir/papers__bari_rad.ir.json
    91472f04793de34177dae84b516d58f926febb27d8734897a87e5981404fb122  tests/golden/ir/papers__dai_fastertransformer.ir.json
    f6119a34cedd31e0f73f902fd62ff2a21e6d6da966a061370569dbd19eb9f8ca  tests/golden/ir/papers__dai_sarathi.ir.json
    1144d36c54a021070e90d8f86aedef03da4920d42eda6fdc9d08b78b512858ca  tests/golden/ir/papers__kong_svf.ir.json
  Never compiled where it was generated: see lean/README.md.
-/
import Serq.Spec.Claims

/-!
  Each claim of a program inside the Lean fragment, as a proposition about
  `Serq.Exec` (lean/Serq/Spec/Claims.lean): for a program with explicit
  sessions, on its one run (`Serq.Claims.check`); for a program whose
  sessions arrive by a law, over its family of workloads (`family_…`,
  `Serq.Claims.inFamily`) and every prefix of each run
  (`Serq.Claims.holdsAt`).  Its proof, when there is one, is the theorem of
  the same name in lean/Serq/Thm/ClaimProofs.lean; the others are listed in
  lean/Serq/Gen/Claims.unproved.txt, which `make lean` prints.
-/

namespace Serq.Gen.Claims

open Serq

/-- The program of tests/golden/ir/papers__bari_rad.ir.json (compiled from examples/papers/bari_rad.sq), over a workload `ws`. -/
def prog_papers__bari_rad (ws : List Session) : Program :=
  { nattrs := 11,
    nobs := 0,
    pools := [],
    engine := { budget := (Expr.num 128),
                chunk := (Expr.num 128),
                memory := none,
                cost := (Expr.bin BinOp.add (Expr.bin BinOp.mul (Expr.num 3000) (Expr.ceilDiv (Expr.iter IterVar.tokens) (Expr.num 128))) (Expr.bin BinOp.mul (Expr.num 8) (Expr.iter IterVar.tokens))),
                keys := [],
                serveOnly := (some (Expr.cond (Expr.bin BinOp.or (Expr.bin BinOp.ge Expr.runDecoding (Expr.num 128)) (Expr.bin BinOp.eq Expr.runDecoding Expr.running)) Expr.decoding (Expr.lnot Expr.decoding))),
                admits := true,
                admitOnly := (some (Expr.cond (Expr.bin BinOp.or (Expr.bin BinOp.ge Expr.runDecoding (Expr.num 128)) (Expr.bin BinOp.eq Expr.runDecoding Expr.running)) Expr.decoding (Expr.lnot Expr.decoding))) },
    blocks := [
      -- block 0
      [(Stmt.set 9 (Expr.bin BinOp.mul (Expr.num 128) (Expr.bin BinOp.add (Expr.num 1) (Expr.bin BinOp.sub (Expr.bin BinOp.mul (Expr.attr 0) (Expr.num 5)) (Expr.bin BinOp.mul (Expr.num 8) (Expr.floorDiv (Expr.bin BinOp.mul (Expr.attr 0) (Expr.num 5)) (Expr.num 8))))))),
       (Stmt.set 10 (Expr.bin BinOp.add (Expr.num 1) (Expr.bin BinOp.sub (Expr.bin BinOp.mul (Expr.attr 0) (Expr.num 193)) (Expr.bin BinOp.mul (Expr.num 512) (Expr.floorDiv (Expr.bin BinOp.mul (Expr.attr 0) (Expr.num 193)) (Expr.num 512))))))],
      -- block 1
      [Stmt.turn,
       (Stmt.run 0 Mode.prefill (Expr.attr 9) none),
       (Stmt.run 0 Mode.decode (Expr.attr 10) none)]],
    init := (some 0),
    main := 1,
    sessions := ws }

/-- The workloads of the claims of tests/golden/ir/papers__bari_rad.ir.json: at most 500 sessions, each presetting vp, vd (the attributes its init block sets) to any natural, arriving at any times, in order, arrive poisson(…). -/
def family_papers__bari_rad (ws : List Session) : Bool :=
  Serq.Claims.inFamily Serq.Claims.Law.poisson [9, 10] 500 ws

/-- claim `token_rate` (examples/papers/bari_rad.sq:72:3): every iteration of the engine, for every workload of the family, after every number of events of its run.  exec_ref on 8 sessions of the program's own workload (the init's values, one arrival every 1 / rate): holds.  Proof: none (Claims.unproved.txt). -/
def papers__bari_rad_token_rate : Prop :=
  ∀ ws, family_papers__bari_rad ws = true →
    Serq.Claims.givenOk (prog_papers__bari_rad ws) none = true →
    ∀ n, Serq.Claims.holdsAt (prog_papers__bari_rad ws) { kind := ClaimKind.everyIter, expr := (Expr.bin BinOp.le (Expr.bin BinOp.mul (Expr.iter IterVar.served) (Expr.num 4024)) (Expr.bin BinOp.mul (Expr.num 128) Expr.now)), given := none } n = true

/-- claim `optimal_tiling` (examples/papers/bari_rad.sq:77:3): every iteration of the engine, given its `given`, for every workload of the family, after every number of events of its run.  exec_ref on 8 sessions of the program's own workload (the init's values, one arrival every 1 / rate): holds.  Proof: none (Claims.unproved.txt). -/
def papers__bari_rad_optimal_tiling : Prop :=
  ∀ ws, family_papers__bari_rad ws = true →
    Serq.Claims.givenOk (prog_papers__bari_rad ws) (some (Expr.bin BinOp.eq (Expr.attr 9) (Expr.bin BinOp.mul (Expr.num 128) (Expr.floorDiv (Expr.attr 9) (Expr.num 128))))) = true →
    ∀ n, Serq.Claims.holdsAt (prog_papers__bari_rad ws) { kind := ClaimKind.everyIter, expr := (Expr.bin BinOp.or (Expr.bin BinOp.eq (Expr.iter IterVar.tokens) (Expr.num 128)) (Expr.bin BinOp.eq (Expr.iter IterVar.decoders) (Expr.iter IterVar.residents))), given := (some (Expr.bin BinOp.eq (Expr.attr 9) (Expr.bin BinOp.mul (Expr.num 128) (Expr.floorDiv (Expr.attr 9) (Expr.num 128))))) } n = true

/-- The program of tests/golden/ir/papers__dai_fastertransformer.ir.json (compiled from examples/papers/dai_fastertransformer.sq), over a workload `ws`. -/
def prog_papers__dai_fastertransformer (ws : List Session) : Program :=
  { nattrs := 11,
    nobs := 0,
    pools := [],
    engine := { budget := (Expr.num 128),
                chunk := (Expr.num 0),
                memory := none,
                cost := (Expr.bin BinOp.add (Expr.num 1128) (Expr.bin BinOp.mul (Expr.num 3547) (Expr.ceilDiv (Expr.iter IterVar.tokens) (Expr.num 128)))),
                keys := [],
                serveOnly := (some (Expr.cond (Expr.bin BinOp.gt Expr.runDecoding (Expr.num 0)) Expr.decoding (Expr.lnot Expr.decoding))),
                admits := true,
                admitOnly := (some (Expr.cond (Expr.bin BinOp.gt Expr.runDecoding (Expr.num 0)) Expr.decoding (Expr.lnot Expr.decoding))) },
    blocks := [
      -- block 0
      [(Stmt.set 9 (Expr.num 290)),
       (Stmt.set 10 (Expr.num 990))],
      -- block 1
      [Stmt.turn,
       (Stmt.run 0 Mode.prefill (Expr.attr 9) none),
       (Stmt.run 0 Mode.decode (Expr.attr 10) none)]],
    init := (some 0),
    main := 1,
    sessions := ws }

/-- The workloads of the claims of tests/golden/ir/papers__dai_fastertransformer.ir.json: at most 500 sessions, each presetting vp, vd (the attributes its init block sets) to any natural, arriving session i at (i + 1) · 46750, arrive renewal(46750). -/
def family_papers__dai_fastertransformer (ws : List Session) : Bool :=
  Serq.Claims.inFamily (Serq.Claims.Law.renewal 46750) [9, 10] 500 ws

/-- claim `not_work_conserving` (examples/papers/dai_fastertransformer.sq:54:3): some iteration of the engine, for some workload of the family, after some number of events of its run.  exec_ref on 8 sessions of the program's own workload (the init's values, arriving as the law says): witnessed.  Proof: Serq/Thm/ClaimProofs.lean. -/
def papers__dai_fastertransformer_not_work_conserving : Prop :=
  ∃ ws, family_papers__dai_fastertransformer ws = true ∧
    Serq.Claims.givenOk (prog_papers__dai_fastertransformer ws) none = true ∧
    ∃ n, Serq.Claims.holdsAt (prog_papers__dai_fastertransformer ws) { kind := ClaimKind.someIter, expr := (Expr.bin BinOp.and (Expr.bin BinOp.ge (Expr.iter IterVar.demand) (Expr.num 128)) (Expr.bin BinOp.lt (Expr.iter IterVar.tokens) (Expr.num 128))), given := none } n = true

/-- claim `token_rate` (examples/papers/dai_fastertransformer.sq:57:3): every iteration of the engine, for every workload of the family, after every number of events of its run.  exec_ref on 8 sessions of the program's own workload (the init's values, arriving as the law says): holds.  Proof: none (Claims.unproved.txt). -/
def papers__dai_fastertransformer_token_rate : Prop :=
  ∀ ws, family_papers__dai_fastertransformer ws = true →
    Serq.Claims.givenOk (prog_papers__dai_fastertransformer ws) none = true →
    ∀ n, Serq.Claims.holdsAt (prog_papers__dai_fastertransformer ws) { kind := ClaimKind.everyIter, expr := (Expr.bin BinOp.le (Expr.bin BinOp.mul (Expr.iter IterVar.served) (Expr.num 4675)) (Expr.bin BinOp.mul (Expr.num 128) Expr.now)), given := none } n = true

/-- The program of tests/golden/ir/papers__dai_sarathi.ir.json (compiled from examples/papers/dai_sarathi.sq), over a workload `ws`. -/
def prog_papers__dai_sarathi (ws : List Session) : Program :=
  { nattrs := 11,
    nobs := 0,
    pools := [],
    engine := { budget := (Expr.num 128),
                chunk := (Expr.num 0),
                memory := none,
                cost := (Expr.bin BinOp.add (Expr.num 1128) (Expr.bin BinOp.mul (Expr.num 3547) (Expr.ceilDiv (Expr.iter IterVar.tokens) (Expr.num 128)))),
                keys := [(Expr.cond Expr.decoding (Expr.num 0) (Expr.num 1))],
                serveOnly := none,
                admits := false,
                admitOnly := none },
    blocks := [
      -- block 0
      [(Stmt.set 9 (Expr.num 290)),
       (Stmt.set 10 (Expr.num 990))],
      -- block 1
      [Stmt.turn,
       (Stmt.run 0 Mode.prefill (Expr.attr 9) none),
       (Stmt.run 0 Mode.decode (Expr.attr 10) none)]],
    init := (some 0),
    main := 1,
    sessions := ws }

/-- The workloads of the claims of tests/golden/ir/papers__dai_sarathi.ir.json: at most 500 sessions, each presetting vp, vd (the attributes its init block sets) to any natural, arriving session i at (i + 1) · 46750, arrive renewal(46750). -/
def family_papers__dai_sarathi (ws : List Session) : Bool :=
  Serq.Claims.inFamily (Serq.Claims.Law.renewal 46750) [9, 10] 500 ws

/-- claim `work_conserving` (examples/papers/dai_sarathi.sq:60:3): every iteration of the engine, for every workload of the family, after every number of events of its run.  exec_ref on 8 sessions of the program's own workload (the init's values, arriving as the law says): holds.  Proof: none (Claims.unproved.txt). -/
def papers__dai_sarathi_work_conserving : Prop :=
  ∀ ws, family_papers__dai_sarathi ws = true →
    Serq.Claims.givenOk (prog_papers__dai_sarathi ws) none = true →
    ∀ n, Serq.Claims.holdsAt (prog_papers__dai_sarathi ws) { kind := ClaimKind.everyIter, expr := (Expr.bin BinOp.or (Expr.bin BinOp.lt (Expr.iter IterVar.demand) (Expr.num 128)) (Expr.bin BinOp.eq (Expr.iter IterVar.tokens) (Expr.num 128))), given := none } n = true

/-- claim `token_rate` (examples/papers/dai_sarathi.sq:65:3): every iteration of the engine, for every workload of the family, after every number of events of its run.  exec_ref on 8 sessions of the program's own workload (the init's values, arriving as the law says): holds.  Proof: none (Claims.unproved.txt). -/
def papers__dai_sarathi_token_rate : Prop :=
  ∀ ws, family_papers__dai_sarathi ws = true →
    Serq.Claims.givenOk (prog_papers__dai_sarathi ws) none = true →
    ∀ n, Serq.Claims.holdsAt (prog_papers__dai_sarathi ws) { kind := ClaimKind.everyIter, expr := (Expr.bin BinOp.le (Expr.bin BinOp.mul (Expr.iter IterVar.served) (Expr.num 4675)) (Expr.bin BinOp.mul (Expr.num 128) Expr.now)), given := none } n = true

/-- The program of tests/golden/ir/papers__kong_svf.ir.json (compiled from examples/papers/kong_svf.sq), over a workload `ws`. -/
def prog_papers__kong_svf (ws : List Session) : Program :=
  { nattrs := 13,
    nobs := 3,
    pools := [{ cap := 20000, block := 0, viaEngine := true, keys := [(Expr.attr 12)] }],
    engine := { budget := (Expr.num 20000),
                chunk := (Expr.num 0),
                memory := (some 0),
                cost := (Expr.num 1),
                keys := [],
                serveOnly := none,
                admits := true,
                admitOnly := none },
    blocks := [
      -- block 0
      [(Stmt.set 9 (Expr.bin BinOp.add (Expr.num 1) (Expr.bin BinOp.sub (Expr.bin BinOp.mul (Expr.attr 0) (Expr.num 389)) (Expr.bin BinOp.mul (Expr.num 1000) (Expr.floorDiv (Expr.bin BinOp.mul (Expr.attr 0) (Expr.num 389)) (Expr.num 1000)))))),
       (Stmt.set 10 (Expr.bin BinOp.add (Expr.num 1) (Expr.bin BinOp.sub (Expr.bin BinOp.mul (Expr.attr 0) (Expr.num 211)) (Expr.bin BinOp.mul (Expr.num 500) (Expr.floorDiv (Expr.bin BinOp.mul (Expr.attr 0) (Expr.num 211)) (Expr.num 500))))))],
      -- block 1
      [Stmt.turn,
       (Stmt.set 11 Expr.now),
       (Stmt.set 12 (Expr.bin BinOp.add (Expr.bin BinOp.mul (Expr.attr 9) (Expr.attr 10)) (Expr.floorDiv (Expr.bin BinOp.add (Expr.bin BinOp.mul (Expr.attr 10) (Expr.attr 10)) (Expr.attr 10)) (Expr.num 2)))),
       (Stmt.observe 0 (Expr.attr 12)),
       (Stmt.observe 1 (Expr.attr 10)),
       (Stmt.hold [{ pool := 0, units := (Expr.bin BinOp.add (Expr.attr 9) (Expr.attr 10)), reserve := none }] 2 none none),
       (Stmt.observe 2 (Expr.bin BinOp.sub Expr.now (Expr.attr 11)))],
      -- block 2
      [(Stmt.run 0 Mode.decode (Expr.attr 10) none)]],
    init := (some 0),
    main := 1,
    sessions := ws }

/-- The workloads of the claims of tests/golden/ir/papers__kong_svf.ir.json: at most 500 sessions, each presetting s, o (the attributes its init block sets) to any natural, arriving all at time 0, arrive batch(…). -/
def family_papers__kong_svf (ws : List Session) : Bool :=
  Serq.Claims.inFamily Serq.Claims.Law.batch [9, 10] 500 ws

/-- claim `queueing_bound` (examples/papers/kong_svf.sq:84:3): at end, given its `given`, for every workload of the family, after every number of events of its run.  exec_ref on 8 sessions of the program's own workload (the init's values, arriving as the law says): holds.  Proof: none (Claims.unproved.txt). -/
def papers__kong_svf_queueing_bound : Prop :=
  ∀ ws, family_papers__kong_svf ws = true →
    Serq.Claims.givenOk (prog_papers__kong_svf ws) (some (Expr.bin BinOp.and (Expr.bin BinOp.le (Expr.bin BinOp.add (Expr.attr 9) (Expr.attr 10)) (Expr.num 2500)) (Expr.bin BinOp.ge (Expr.attr 10) (Expr.num 1)))) = true →
    ∀ n, Serq.Claims.holdsAt (prog_papers__kong_svf ws) { kind := ClaimKind.atEnd, expr := (Expr.bin BinOp.le (Expr.bin BinOp.mul (Expr.num 17500) (Expr.bin BinOp.sub (Expr.agg Agg.total 2) (Expr.agg Agg.total 1))) (Expr.bin BinOp.mul (Expr.num 2) (Expr.bin BinOp.sub (Expr.agg Agg.prefixTotal 0) (Expr.agg Agg.total 0)))), given := (some (Expr.bin BinOp.and (Expr.bin BinOp.le (Expr.bin BinOp.add (Expr.attr 9) (Expr.attr 10)) (Expr.num 2500)) (Expr.bin BinOp.ge (Expr.attr 10) (Expr.num 1)))) } n = true

end Serq.Gen.Claims
