/-
  The memory invariant of the pool model: every command keeps
  `allocated + cached ≤ cap`.

  Hand-written; never compiled here (lean/README.md).

  The pool model is `Serq.Exec`'s own: a pool is an `Exec.PoolSt` (units
  allocated, cache entries, queue), and each command below is the operation
  `Exec` performs on a pool, built from the very functions `Exec` calls
  (`poolAlloc`, `makeRoom`, `evictOne`, `killOwn`, `poolRelease`), guarded
  by the condition under which `Exec` performs it:

  * `enqueue`, `requeue`, `dequeue`: a session joins the queue, is put back at
    its head after a preemption, is admitted (queues hold no memory);
  * `take s took need`: an admission — session s consumes `took` units of its
    own cached prefix, then `need` units are allocated, evicting cached blocks
    in the way; `Exec` admits only when `used + need ≤ cap` or the allocation
    is the consumed prefix itself (`need ≤ took`);
  * `grow need`: a growing run's hold grows, when `used + need ≤ cap` (else
    `Exec` preempts first);
  * `release units keep …`: a hold gives back `units`, caching `keep ≤ units`;
  * `evict`: one block leaves the cache.

  What is not proved here: that every transition of `Exec.drive` is a sequence
  of these commands with their guards met (it is by construction of
  `Exec.lean`, not by a theorem).
-/
import Serq.Spec.Exec

namespace Serq.Thm.Memory

open Serq.Exec

/-- Allocated plus cached units within the capacity. -/
def Inv (cap : Nat) (ps : PoolSt) : Prop :=
  ps.used + cachedTotal ps.cache ≤ cap

/-! ## The cache -/

theorem appendEntry_total (e : Entry) : ∀ xs : List Entry,
    cachedTotal (appendEntry xs e) = cachedTotal xs + e.units
  | [] => by
    simp only [appendEntry, cachedTotal] <;> omega
  | x :: xs => by
    have ih := appendEntry_total e xs
    simp only [appendEntry, cachedTotal] <;> omega

theorem appendEntry_total_mk (xs : List Entry) (o : Option Nat) (u t r : Nat) :
    cachedTotal (appendEntry xs { owner := o, units := u, time := t, ord := r }) = cachedTotal xs + u :=
  appendEntry_total _ xs

/-- Consuming `k` units of the own entry takes exactly `k` units out of the
cache, when the entry has them. -/
theorem killOwn_total (s k : Nat) : ∀ es : List Entry,
    k ≤ ownUnits es s → cachedTotal (killOwn es s k) + k = cachedTotal es
  | [], h => by
    simp only [ownUnits] at h
    simp only [killOwn, cachedTotal] <;> omega
  | e :: es, h => by
    by_cases ho : ownedBy e.owner s = true
    · have hu : ownUnits (e :: es) s = e.units := by
        simp only [ownUnits]
        rw [if_pos ho]
      rw [hu] at h
      by_cases h0 : e.units - k = 0
      · have hk : killOwn (e :: es) s k = es := by
          simp only [killOwn]
          rw [if_pos ho, if_pos h0]
        rw [hk]
        simp only [cachedTotal] <;> omega
      · have hk : killOwn (e :: es) s k = { e with owner := none, units := e.units - k } :: es := by
          simp only [killOwn]
          rw [if_pos ho, if_neg h0]
        rw [hk]
        simp only [cachedTotal] <;> omega
    · have hu : ownUnits (e :: es) s = ownUnits es s := by
        simp only [ownUnits]
        rw [if_neg ho]
      rw [hu] at h
      have hk : killOwn (e :: es) s k = e :: killOwn es s k := by
        simp only [killOwn]
        rw [if_neg ho]
      have ih := killOwn_total s k es h
      rw [hk]
      simp only [cachedTotal] <;> omega

theorem killOwn_zero (s : Nat) (es : List Entry) : cachedTotal (killOwn es s 0) = cachedTotal es := by
  have h := killOwn_total s 0 es (Nat.zero_le _)
  omega

theorem evictOne_le (b : Nat) : ∀ es : List Entry, cachedTotal (evictOne b es) ≤ cachedTotal es
  | [] => by
    simp only [evictOne, cachedTotal] <;> omega
  | e :: es => by
    by_cases h : b = 0 ∨ e.units ≤ b
    · have he : evictOne b (e :: es) = es := by
        simp only [evictOne]
        rw [if_pos h]
      rw [he]
      simp only [cachedTotal] <;> omega
    · have he : evictOne b (e :: es) = { e with units := e.units - b } :: es := by
        simp only [evictOne]
        rw [if_neg h]
      rw [he]
      simp only [cachedTotal] <;> omega

/-- Each eviction takes something: `makeRoom`'s fuel bound. -/
theorem evictOne_lt (b : Nat) (e : Entry) (es : List Entry) :
    evictable (evictOne b (e :: es)) < evictable (e :: es) := by
  by_cases h : b = 0 ∨ e.units ≤ b
  · have he : evictOne b (e :: es) = es := by
      simp only [evictOne]
      rw [if_pos h]
    rw [he]
    simp only [evictable, cachedTotal, List.length_cons] <;> omega
  · have he : evictOne b (e :: es) = { e with units := e.units - b } :: es := by
      simp only [evictOne]
      rw [if_neg h]
    rw [he]
    simp only [evictable, cachedTotal, List.length_cons] <;> omega

/-! ## Making room -/

theorem makeRoom_used (cap b need : Nat) : ∀ (fuel : Nat) (ps : PoolSt),
    (makeRoom fuel cap b need ps).used = ps.used
  | 0, _ => rfl
  | fuel + 1, ps => by
    by_cases h1 : ps.used + cachedTotal ps.cache + need ≤ cap ∨ ps.cache.isEmpty = true
    · have e1 : makeRoom (fuel + 1) cap b need ps = ps := by
        simp only [makeRoom]
        rw [if_pos h1]
      rw [e1]
    · have e1 : makeRoom (fuel + 1) cap b need ps =
          makeRoom fuel cap b need { ps with cache := evictOne b ps.cache } := by
        simp only [makeRoom]
        rw [if_neg h1]
      rw [e1]
      exact makeRoom_used cap b need fuel _

theorem cachedTotal_nil_of_isEmpty (es : List Entry) (h : es.isEmpty = true) : cachedTotal es = 0 := by
  cases es with
  | nil => rfl
  | cons e es => simp [List.isEmpty] at h

/-- With enough fuel, `makeRoom` evicts until the request fits beside the
allocations and what stays cached, whenever it fits beside the allocations. -/
theorem makeRoom_fits (cap b need : Nat) : ∀ (fuel : Nat) (ps : PoolSt),
    evictable ps.cache < fuel → ps.used + need ≤ cap →
    (makeRoom fuel cap b need ps).used + cachedTotal (makeRoom fuel cap b need ps).cache + need ≤ cap
  | 0, _, hf, _ => absurd hf (Nat.not_lt_zero _)
  | fuel + 1, ps, hf, hn => by
    by_cases h1 : ps.used + cachedTotal ps.cache + need ≤ cap ∨ ps.cache.isEmpty = true
    · have e1 : makeRoom (fuel + 1) cap b need ps = ps := by
        simp only [makeRoom]
        rw [if_pos h1]
      rw [e1]
      cases h1 with
      | inl h => exact h
      | inr h =>
        have h0 := cachedTotal_nil_of_isEmpty ps.cache h
        omega
    · have e1 : makeRoom (fuel + 1) cap b need ps =
          makeRoom fuel cap b need { ps with cache := evictOne b ps.cache } := by
        simp only [makeRoom]
        rw [if_neg h1]
      rw [e1]
      apply makeRoom_fits cap b need fuel
      · show evictable (evictOne b ps.cache) < fuel
        cases hc : ps.cache with
        | nil =>
          rw [hc] at h1
          simp [List.isEmpty] at h1
        | cons e es =>
          rw [hc] at hf
          have hlt := evictOne_lt b e es
          omega
      · exact hn

/-- `makeRoom` only ever takes from the cache. -/
theorem makeRoom_total (cap b need : Nat) : ∀ (fuel : Nat) (ps : PoolSt),
    cachedTotal (makeRoom fuel cap b need ps).cache ≤ cachedTotal ps.cache
  | 0, _ => Nat.le_refl _
  | fuel + 1, ps => by
    by_cases h1 : ps.used + cachedTotal ps.cache + need ≤ cap ∨ ps.cache.isEmpty = true
    · have e1 : makeRoom (fuel + 1) cap b need ps = ps := by
        simp only [makeRoom]
        rw [if_pos h1]
      rw [e1]
      exact Nat.le_refl _
    · have e1 : makeRoom (fuel + 1) cap b need ps =
          makeRoom fuel cap b need { ps with cache := evictOne b ps.cache } := by
        simp only [makeRoom]
        rw [if_neg h1]
      rw [e1]
      have h2 := makeRoom_total cap b need fuel { ps with cache := evictOne b ps.cache }
      have h3 := evictOne_le b ps.cache
      exact Nat.le_trans h2 h3

/-! ## The pool operations of `Exec` -/

theorem poolAlloc_inv (cap b need : Nat) (ps : PoolSt) (h : ps.used + need ≤ cap) :
    Inv cap (poolAlloc cap b need ps) := by
  have hf := makeRoom_fits cap b need (evictable ps.cache + 1) ps (by omega) h
  simp only [Inv, poolAlloc] <;> omega

theorem take_inv (cap b s took need : Nat) (ps : PoolSt) (h : Inv cap ps)
    (ht : took ≤ ownUnits ps.cache s) (hn : ps.used + need ≤ cap ∨ need ≤ took) :
    Inv cap (poolAlloc cap b need { ps with cache := killOwn ps.cache s took }) := by
  have hk := killOwn_total s took ps.cache ht
  unfold Inv at h
  apply poolAlloc_inv
  show ps.used + need ≤ cap
  omega

theorem poolRelease_inv (cap units keep s t o : Nat) (ps : PoolSt) (h : Inv cap ps)
    (hu : units ≤ ps.used) (hk : keep ≤ units) :
    Inv cap (poolRelease units keep s t o ps) := by
  unfold Inv at h ⊢
  by_cases h0 : keep = 0
  · simp only [poolRelease]
    rw [if_pos h0]
    omega
  · simp only [poolRelease]
    rw [if_neg h0, appendEntry_total_mk, killOwn_zero]
    omega

theorem evict_inv (cap b : Nat) (ps : PoolSt) (h : Inv cap ps) :
    Inv cap { ps with cache := evictOne b ps.cache } := by
  have h2 := evictOne_le b ps.cache
  unfold Inv at h ⊢
  show ps.used + cachedTotal (evictOne b ps.cache) ≤ cap
  omega

/-! ## The pool model and its invariant -/

/-- The commands of the pool model. -/
inductive Cmd where
  | enqueue (s : Nat)
  | requeue (s : Nat)
  | dequeue (s : Nat)
  | take (s took need : Nat)
  | grow (need : Nat)
  | release (units keep s t o : Nat)
  | evict

/-- One command, as `Exec` performs it; a command whose guard fails leaves the
pool as it is. -/
def Cmd.apply (cap b : Nat) (ps : PoolSt) : Cmd → PoolSt
  | .enqueue s => { ps with queue := ps.queue ++ [s] }
  | .requeue s => { ps with queue := s :: ps.queue }
  | .dequeue s => { ps with queue := removeQ s ps.queue }
  | .take s took need =>
    if took ≤ ownUnits ps.cache s ∧ (ps.used + need ≤ cap ∨ need ≤ took) then
      poolAlloc cap b need { ps with cache := killOwn ps.cache s took }
    else ps
  | .grow need => if ps.used + need ≤ cap then poolAlloc cap b need ps else ps
  | .release units keep s t o =>
    if units ≤ ps.used ∧ keep ≤ units then poolRelease units keep s t o ps else ps
  | .evict => { ps with cache := evictOne b ps.cache }

/-- The memory invariant: every command of the pool model keeps
allocated + cached ≤ cap. -/
theorem invariant (cap b : Nat) (ps : PoolSt) (c : Cmd) (h : Inv cap ps) :
    Inv cap (c.apply cap b ps) := by
  cases c with
  | enqueue s => exact h
  | requeue s => exact h
  | dequeue s => exact h
  | take s took need =>
    simp only [Cmd.apply]
    by_cases hc : took ≤ ownUnits ps.cache s ∧ (ps.used + need ≤ cap ∨ need ≤ took)
    · rw [if_pos hc]
      exact take_inv cap b s took need ps h hc.1 hc.2
    · rw [if_neg hc]
      exact h
  | grow need =>
    simp only [Cmd.apply]
    by_cases hc : ps.used + need ≤ cap
    · rw [if_pos hc]
      exact poolAlloc_inv cap b need ps hc
    · rw [if_neg hc]
      exact h
  | release units keep s t o =>
    simp only [Cmd.apply]
    by_cases hc : units ≤ ps.used ∧ keep ≤ units
    · rw [if_pos hc]
      exact poolRelease_inv cap units keep s t o ps h hc.1 hc.2
    · rw [if_neg hc]
      exact h
  | evict => exact evict_inv cap b ps h

/-- Any sequence of commands keeps the invariant. -/
theorem invariant_all (cap b : Nat) : ∀ (cs : List Cmd) (ps : PoolSt),
    Inv cap ps → Inv cap (cs.foldl (fun q c => c.apply cap b q) ps)
  | [], _, h => h
  | c :: cs, ps, h => invariant_all cap b cs (c.apply cap b ps) (invariant cap b ps c h)

end Serq.Thm.Memory
