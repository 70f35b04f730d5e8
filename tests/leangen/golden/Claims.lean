/-
  GENERATED FILE: do not edit.
  Written by `python -m leangen claims`; `python -m leangen claims --check` (make check,
  make lean) fails when the file is not what that command writes now.
  Generator: leangen 0.2.0, reading IR version 1.
  The IR files read that have claims (SHA-256):
    d984da21aca3089476f010f4d9a8343e0da5b0a7344ee12b8fc8fe144cda3b0b  tests/leangen/golden/claims_example.ir.json
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

/-- The program of tests/leangen/golden/claims_example.ir.json (compiled from examples/oracle/vllm_request.sq). -/
def prog_claims_example : Program :=
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

/-- claim `tokens_within_budget` (examples/oracle/vllm_request.sq:80:3): every iteration of the engine.  exec_ref: holds.  Proof: Serq/Thm/ClaimProofs.lean. -/
def claims_example_tokens_within_budget : Prop :=
  Serq.Claims.check prog_claims_example 566 { kind := ClaimKind.everyIter, expr := (Expr.bin BinOp.le (Expr.iter IterVar.tokens) (Expr.num 64)), given := none } = true

/-- claim `a_big_prefill` (examples/oracle/vllm_request.sq:81:3): some iteration of the engine.  exec_ref: holds.  Proof: none (Claims.unproved.txt). -/
def claims_example_a_big_prefill : Prop :=
  Serq.Claims.check prog_claims_example 566 { kind := ClaimKind.someIter, expr := (Expr.bin BinOp.ge (Expr.iter IterVar.prefilled) (Expr.num 40)), given := none } = true

/-- claim `all_done` (examples/oracle/vllm_request.sq:82:3): at end, given its `given`.  exec_ref: holds.  Proof: none (Claims.unproved.txt). -/
def claims_example_all_done : Prop :=
  Serq.Claims.check prog_claims_example 566 { kind := ClaimKind.atEnd, expr := (Expr.bin BinOp.eq (Expr.agg Agg.count 1) (Expr.num 3)), given := (some (Expr.bin BinOp.ge (Expr.attr 12) (Expr.num 8))) } = true

/-- claim `never_decodes` (examples/oracle/vllm_request.sq:83:3): every iteration of the engine.  exec_ref: does not hold.  Proof: none (Claims.unproved.txt). -/
def claims_example_never_decodes : Prop :=
  Serq.Claims.check prog_claims_example 566 { kind := ClaimKind.everyIter, expr := (Expr.bin BinOp.eq (Expr.iter IterVar.decoders) (Expr.num 0)), given := none } = true

end Serq.Gen.Claims
