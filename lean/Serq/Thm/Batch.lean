/-
  What one iteration's serving schedules when no run grows, no `only`
  predicate excludes and the engine has no chunk: every resident the serving
  order names gets its whole demand until the budget runs out, whatever the
  order, so the batch is min(budget, demand) (`serveAll_plain`).  This is the
  serving half of a work-conserving engine (Dai et al.'s (8)-(9), the claim
  `work_conserving` of examples/papers/dai_sarathi.sq): serving by keys
  changes who is served first, not how much is served.

  Hand-written; never compiled here (lean/README.md).

  Not proved here: that the serving order `Exec.serveOrder` names every
  resident once (it is a stable sort of the residents' sessions), that the
  residents' sessions are distinct at every iteration of a run, and so that
  `demandS` of the serving order is the iteration's `demand`; with those,
  `serveAll_plain` gives `tokens = min budget demand` at every iteration of
  a program without growth, `only` or chunk.
-/
import Serq.Spec.Exec

namespace Serq.Thm.Batch

open Serq Serq.Exec

/-- A resident's tokens with an unlimited budget and no chunk (the term of
`Exec.demandOf` at chunk 0). -/
def dem (j : Job) : Nat :=
  if j.decode = true then Nat.min 1 j.rem else j.rem

def demOf : Option Job → Nat
  | some j => dem j
  | none => 0

/-- The demand of the residents a list of sessions names. -/
def demandS (m : Machine) : List Nat → Nat
  | [] => 0
  | s :: ss => demOf (jobOf m.residents s) + demandS m ss

/-- A list that names each session once. -/
def Fresh : List Nat → Prop
  | [] => True
  | s :: ss => (∀ t, t ∈ ss → t ≠ s) ∧ Fresh ss

theorem nmin_cases (a b : Nat) : (Nat.min a b = a ∧ a ≤ b) ∨ (Nat.min a b = b ∧ b < a) := by
  by_cases h : a ≤ b
  · exact Or.inl ⟨Nat.min_eq_left h, h⟩
  · exact Or.inr ⟨Nat.min_eq_right (by omega), by omega⟩

theorem jobOf_some : ∀ (js : List Job) (s : Nat) (j : Job), jobOf js s = some j → j.sess = s ∧ j ∈ js
  | [], _, _, h => by
    simp [jobOf] at h
  | k :: js, s, j, h => by
    by_cases hk : Nat.beq k.sess s = true
    · have e : jobOf (k :: js) s = some k := by
        simp only [jobOf]
        rw [if_pos hk]
      rw [e] at h
      cases h
      exact ⟨Nat.eq_of_beq_eq_true hk, List.Mem.head _⟩
    · have e : jobOf (k :: js) s = jobOf js s := by
        simp only [jobOf]
        rw [if_neg hk]
      rw [e] at h
      have ih := jobOf_some js s j h
      exact ⟨ih.1, List.Mem.tail _ ih.2⟩

theorem batchSum_append (x : Nat × Nat) : ∀ l : List (Nat × Nat),
    batchSum (l ++ [x]) = batchSum l + x.2
  | [] => by
    simp only [List.nil_append, batchSum] <;> omega
  | y :: l => by
    have ih := batchSum_append x l
    simp only [List.cons_append, batchSum] <;> omega

/-- Appending another session's tokens leaves a session's tokens alone. -/
theorem batchOf_append_ne (x : Nat × Nat) (v : Nat) (h : x.1 ≠ v) : ∀ l : List (Nat × Nat),
    batchOf (l ++ [x]) v = batchOf l v
  | [] => by
    have hb : ¬ (Nat.beq x.1 v = true) := fun hc => h (Nat.eq_of_beq_eq_true hc)
    simp only [List.nil_append, batchOf]
    split
    · rename_i hc
      exact absurd hc hb
    · omega
  | y :: l => by
    have ih := batchOf_append_ne x v h l
    simp only [List.cons_append, batchOf]
    rw [ih]

/-- At chunk 0 a resident asks for its demand, within the budget left. -/
theorem want_chunk0 (pl : Plan) (j : Job) (h : pl.chunk = 0) : want pl j = Nat.min (dem j) pl.left := by
  obtain ⟨left, chunk, batch, stop, noAdmit, pre0⟩ := pl
  obtain ⟨sess, decode, rem, grow, key, work⟩ := j
  have hc : chunk = 0 := h
  subst hc
  cases decode
  · show Nat.min (Nat.min rem rem) left = Nat.min rem left
    have e : Nat.min rem rem = rem := by
      rcases nmin_cases rem rem with ⟨h1, _⟩ | ⟨h1, _⟩ <;> exact h1
    rw [e]
  · rfl

/-- Serving a list of residents that names each once and none served yet,
when nothing grows, `only` excludes none and there is no chunk: the machine
is unchanged and the batch gains min(budget left, their demand) tokens. -/
theorem serveAll_plain (k : Nat) (p : Program) (m : Machine)
    (hOnly : p.engine.serveOnly = none) (hGrow : ∀ j, j ∈ m.residents → j.grow = none) :
    ∀ (ss : List Nat) (pl : Plan), pl.stop = false → pl.chunk = 0 → Fresh ss →
      (∀ s, s ∈ ss → batchOf pl.batch s = 0) →
      (serveAll k p m pl ss).1 = m ∧
      batchSum (serveAll k p m pl ss).2.batch = batchSum pl.batch + Nat.min pl.left (demandS m ss)
  | [], pl, _, _, _, _ => by
    have e : serveAll k p m pl [] = (m, pl) := by
      simp only [serveAll]
    rw [e]
    refine ⟨rfl, ?_⟩
    show batchSum pl.batch = batchSum pl.batch + Nat.min pl.left 0
    have z : Nat.min pl.left 0 = 0 := Nat.min_eq_right (Nat.zero_le _)
    omega
  | s :: ss, pl, hstop, hchunk, hfresh, hfree => by
    have hf : (∀ t, t ∈ ss → t ≠ s) ∧ Fresh ss := hfresh
    have hfree' : ∀ t, t ∈ ss → batchOf pl.batch t = 0 := fun t ht => hfree t (List.Mem.tail _ ht)
    by_cases hl : pl.left = 0
    · -- the budget is spent: nothing more is served
      have hc : (pl.stop || Nat.beq pl.left 0) = true := by
        simp [hstop, hl]
      have e : serveAll k p m pl (s :: ss) = (m, pl) := by
        simp only [serveAll]
        rw [if_pos hc]
      rw [e]
      refine ⟨rfl, ?_⟩
      show batchSum pl.batch = batchSum pl.batch + Nat.min pl.left (demandS m (s :: ss))
      have z : Nat.min pl.left (demandS m (s :: ss)) = 0 := by
        rw [hl]
        exact Nat.min_eq_left (Nat.zero_le _)
      omega
    · have hc : ¬ ((pl.stop || Nat.beq pl.left 0) = true) := by
        rw [hstop]
        intro h0
        exact hl (Nat.eq_of_beq_eq_true h0)
      have ih := serveAll_plain k p m hOnly hGrow ss
      cases hj : jobOf m.residents s with
      | none =>
        -- no resident of that session: nothing to serve
        have e : serveAll k p m pl (s :: ss) = serveAll k p m pl ss := by
          simp only [serveAll]
          rw [if_neg hc]
          simp only [hj]
        have hd : demandS m (s :: ss) = demandS m ss := by
          show demOf (jobOf m.residents s) + demandS m ss = demandS m ss
          simp only [hj, demOf, Nat.zero_add]
        rw [e, hd]
        exact ih pl hstop hchunk hf.2 hfree'
      | some j =>
        have hjs := jobOf_some m.residents s j hj
        have hgr : j.grow = none := hGrow j hjs.2
        have hb : (Nat.beq (batchOf pl.batch s) 0 && onlyOk p m j p.engine.serveOnly) = true := by
          simp [hfree s (List.Mem.head _), hOnly, onlyOk]
        have e : serveAll k p m pl (s :: ss) =
            serveAll k p (serveJob k p m pl j).1 (serveJob k p m pl j).2 ss := by
          simp only [serveAll]
          rw [if_neg hc]
          simp only [hj]
          rw [if_pos hb]
        have hd : demandS m (s :: ss) = dem j + demandS m ss := by
          show demOf (jobOf m.residents s) + demandS m ss = dem j + demandS m ss
          simp only [hj, demOf]
        have hw : want pl j = Nat.min (dem j) pl.left := want_chunk0 pl j hchunk
        rw [e, hd]
        by_cases hn : want pl j = 0
        · -- it asks for nothing (its demand is 0): the plan is unchanged
          have hs : serveJob k p m pl j = (m, pl) := by
            have hb0 : Nat.beq (want pl j) 0 = true := by simp [hn]
            simp only [serveJob]
            rw [if_pos hb0]
          rw [hs]
          have hd0 : dem j = 0 := by
            rcases nmin_cases (dem j) pl.left with ⟨h1, h2⟩ | ⟨h1, h2⟩ <;> omega
          rw [hd0]
          show (serveAll k p m pl ss).1 = m ∧
            batchSum (serveAll k p m pl ss).2.batch = batchSum pl.batch + Nat.min pl.left (0 + demandS m ss)
          have r := ih pl hstop hchunk hf.2 hfree'
          refine ⟨r.1, ?_⟩
          rw [r.2, Nat.zero_add]
        · -- it is served `want pl j` tokens, appended to the batch
          have hs : serveJob k p m pl j = (m, addBatch pl j.sess (want pl j)) := by
            have hb0 : ¬ (Nat.beq (want pl j) 0 = true) := fun h0 => hn (Nat.eq_of_beq_eq_true h0)
            simp only [serveJob]
            rw [if_neg hb0]
            simp only [hgr]
          have hsess : j.sess = s := hjs.1
          rw [hs, hsess]
          show (serveAll k p m (addBatch pl s (want pl j)) ss).1 = m ∧
            batchSum (serveAll k p m (addBatch pl s (want pl j)) ss).2.batch
              = batchSum pl.batch + Nat.min pl.left (dem j + demandS m ss)
          have hfree2 : ∀ t, t ∈ ss → batchOf (addBatch pl s (want pl j)).batch t = 0 := by
            intro t ht
            show batchOf (pl.batch ++ [(s, want pl j)]) t = 0
            rw [batchOf_append_ne (s, want pl j) t (fun e => hf.1 t ht e.symm) pl.batch]
            exact hfree' t ht
          have r := ih (addBatch pl s (want pl j)) hstop hchunk hf.2 hfree2
          refine ⟨r.1, ?_⟩
          rw [r.2]
          show batchSum (pl.batch ++ [(s, want pl j)]) + Nat.min (pl.left - want pl j) (demandS m ss)
            = batchSum pl.batch + Nat.min pl.left (dem j + demandS m ss)
          rw [batchSum_append]
          show batchSum pl.batch + want pl j + Nat.min (pl.left - want pl j) (demandS m ss)
            = batchSum pl.batch + Nat.min pl.left (dem j + demandS m ss)
          rw [hw]
          rcases nmin_cases (dem j) pl.left with ⟨h1, h2⟩ | ⟨h1, h2⟩ <;> rw [h1]
          · rcases nmin_cases (pl.left - dem j) (demandS m ss) with ⟨h3, h4⟩ | ⟨h3, h4⟩ <;>
              rcases nmin_cases pl.left (dem j + demandS m ss) with ⟨h5, h6⟩ | ⟨h5, h6⟩ <;>
              rw [h3, h5] <;> omega
          · rcases nmin_cases (pl.left - pl.left) (demandS m ss) with ⟨h3, h4⟩ | ⟨h3, h4⟩ <;>
              rcases nmin_cases pl.left (dem j + demandS m ss) with ⟨h5, h6⟩ | ⟨h5, h6⟩ <;>
              rw [h3, h5] <;> omega

end Serq.Thm.Batch
