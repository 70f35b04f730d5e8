/-
  Proofs of the claims stated in `Serq.Gen.Claims` (generated), and the
  lemmas about the papers' programs the others would rest on.

  Hand-written; never compiled here (lean/README.md).  The proof of the
  claim proposition `Serq.Gen.Claims.NAME` is the theorem
  `Serq.Thm.ClaimProofs.NAME` of this file; `python -m leangen claims` reads
  the theorem names of this file, and a claim without one is listed in
  lean/Serq/Gen/Claims.unproved.txt, which `make lean` prints.

  * A claim of a program with explicit sessions is a decidable proposition
    about the program's one run: when it holds, `by decide +kernel` proves it.
  * A claim of a program whose sessions arrive by a law is about a family of
    workloads.  `some iteration` asks for one workload of the family and one
    number of events: a witness, and the kernel evaluates the run
    (`papers__dai_fastertransformer_not_work_conserving` below).  `every
    iteration` and `at end` quantify over every workload and every prefix of
    its run: they need invariants of `Exec.drive` that are not proved here
    (see lean/README.md); the per-iteration facts they would use are:
    - `dai_iteration_rate`, `bari_iteration_rate`: Theorem 2(a)'s and
      Theorem 1's arithmetic, an iteration of b ≤ b_max tokens lasts at
      least b / b_max of the time the rate allows (`token_rate` of the three
      engines);
    - `Serq.Thm.Batch.serveAll_plain`: without growth, `only` or chunk, the
      serving schedules min(budget, demand) tokens in any serving order
      (`work_conserving` of Sarathi's engine).
-/
import Serq.Gen.Claims
import Serq.Thm.Batch

namespace Serq.Thm.ClaimProofs

open Serq Serq.Exec

/-! ## Dai et al., FasterTransformer: `not_work_conserving` (§4) -/

/-- Point C: two requests of 290 prompt and 990 output tokens, arriving at
46 750 and 93 500 (session i at (i + 1) · 46 750, the program's renewal). -/
def ftWitness : List Session :=
  [{ arrive := 46750, attrs := [(9, 290), (10, 990)], turns := [], preset := false },
   { arrive := 93500, attrs := [(9, 290), (10, 990)], turns := [], preset := false }]

/-- The second request arrives at 93 500, as the 11th iteration starts, while
the first decodes alone: the batch holds one token while 291 could be served
(the 11th iteration is recorded within 13 events: two arrivals and ten
iteration ends). -/
theorem papers__dai_fastertransformer_not_work_conserving :
    Serq.Gen.Claims.papers__dai_fastertransformer_not_work_conserving := by
  unfold Serq.Gen.Claims.papers__dai_fastertransformer_not_work_conserving
  exact ⟨ftWitness, by decide +kernel, by decide +kernel, 13, by decide +kernel⟩

/-! ## The engines' rate (Dai's Theorem 2(a), Bari's Theorem 1): per iteration -/

/-- Dai's batch time at point C, `t_b = 1128 + 3547 ⌈b / 128⌉`: a batch of at
most b_max = 128 tokens serves at most 128 tokens per t_128 = 4 675. -/
theorem dai_batch_rate (b : Nat) (h : b ≤ 128) :
    b * 4675 ≤ 128 * (1128 + 3547 * ((b + 128 - 1) / 128)) := by
  omega

theorem sarathi_cost (ws : List Session) (r : Iter) :
    evalI r (Serq.Gen.Claims.prog_papers__dai_sarathi ws).engine.cost
      = 1128 + 3547 * ((r.tokens + 128 - 1) / 128) := rfl

theorem fastertransformer_cost (ws : List Session) (r : Iter) :
    evalI r (Serq.Gen.Claims.prog_papers__dai_fastertransformer ws).engine.cost
      = 1128 + 3547 * ((r.tokens + 128 - 1) / 128) := rfl

/-- An iteration of Sarathi's engine of at most 128 tokens lasts at least its
tokens' share of the rate `token_rate` states. -/
theorem dai_iteration_rate (ws : List Session) (r : Iter) (h : r.tokens ≤ 128) :
    r.tokens * 4675 ≤ 128 * evalI r (Serq.Gen.Claims.prog_papers__dai_sarathi ws).engine.cost := by
  rw [sarathi_cost]
  exact dai_batch_rate r.tokens h

theorem fastertransformer_iteration_rate (ws : List Session) (r : Iter) (h : r.tokens ≤ 128) :
    r.tokens * 4675 ≤ 128 * evalI r (Serq.Gen.Claims.prog_papers__dai_fastertransformer ws).engine.cost := by
  rw [fastertransformer_cost]
  exact dai_batch_rate r.tokens h

/-- RAD's batch time, `3000 ⌈n / 128⌉ + 8 n`: a batch of at most 128 tokens
serves at most 128 tokens per 3000 + 8 · 128 = 4 024 (its equation (7)
without the attention terms; Theorem 1). -/
theorem bari_batch_rate (b : Nat) (h : b ≤ 128) :
    b * 4024 ≤ 128 * (3000 * ((b + 128 - 1) / 128) + 8 * b) := by
  omega

theorem bari_cost (ws : List Session) (r : Iter) :
    evalI r (Serq.Gen.Claims.prog_papers__bari_rad ws).engine.cost
      = 3000 * ((r.tokens + 128 - 1) / 128) + 8 * r.tokens := rfl

theorem bari_iteration_rate (ws : List Session) (r : Iter) (h : r.tokens ≤ 128) :
    r.tokens * 4024 ≤ 128 * evalI r (Serq.Gen.Claims.prog_papers__bari_rad ws).engine.cost := by
  rw [bari_cost]
  exact bari_batch_rate r.tokens h

end Serq.Thm.ClaimProofs
