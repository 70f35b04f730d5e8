/-
  The serving order of a step engine: without a per-request chunk cap,
  serving in admission order is serving decode-first; a cap breaks it.

  Hand-written; never compiled here (lean/README.md).

  The model is the part of `Exec.attempt` that orders service: the running
  requests in admission order, each a decode (one token) or a prefill (its
  remaining prompt, up to the chunk when there is one), served in order
  until the budget is spent (`Exec.want`).  At the end of the iteration a
  prefill that got its whole remaining prompt decodes (`step1`).  Admissions
  append prefills at the end of the order (`Exec.insertJob` by admission
  number).

  The argument: call a list *shaped* when every decode comes before every
  prefill (and every prefill has prompt left).  On a shaped list, admission
  order and decode-first order are the same list (`decodeFirst_eq`), so they
  serve the same tokens to the same requests (`serve_eq_decode_first`).
  Without a chunk cap an iteration keeps the shape (`shaped_after`): a prefill
  that cannot finish takes all the budget left, so no later prefill gets a
  token and none of them can finish before it.  Admitting prefills keeps it
  (`shaped_append`), so every iteration of a run that starts empty serves in
  decode-first order (`shaped_run`).  With a chunk cap a prefill is cut short
  and a later, shorter one finishes first: the order is no longer
  decode-first, and the next iteration gives a token to a different request
  (`chunk_cap_breaks_shape`).

  Not modelled here: requests leaving (a finished decode, a preemption
  victim); removing a request keeps a shaped list shaped, but that is not
  proved in this file.
-/

namespace Serq.Thm.Serve

/-- A running request: its id, whether it decodes, the tokens its run has
left (a prefill's remaining prompt). -/
structure Req where
  id : Nat
  decode : Bool
  rem : Nat
  deriving DecidableEq

/-- A prefill's tokens under a per-request cap `chunk` (0: no cap). -/
def capTo (chunk n : Nat) : Nat :=
  if chunk = 0 then n else (if n ≤ chunk then n else chunk)

/-- The tokens one request takes from the budget left (`Exec.want`). -/
def take1 (chunk left : Nat) (r : Req) : Nat :=
  if r.decode = true then (if 0 < left then 1 else 0)
  else (if capTo chunk r.rem ≤ left then capTo chunk r.rem else left)

/-- Serve the list in order: (id, tokens) for each request. -/
def serve (chunk : Nat) : Nat → List Req → List (Nat × Nat)
  | _, [] => []
  | left, r :: rs => (r.id, take1 chunk left r) :: serve chunk (left - take1 chunk left r) rs

def decoders : List Req → List Req
  | [] => []
  | r :: rs => if r.decode = true then r :: decoders rs else decoders rs

def prefills : List Req → List Req
  | [] => []
  | r :: rs => if r.decode = true then prefills rs else r :: prefills rs

/-- Decode-first order: the decodes, then the prefills, each in admission order. -/
def decodeFirst (l : List Req) : List Req :=
  decoders l ++ prefills l

/-- A request after the iteration gave it `t` tokens: a prefill that got its
whole remaining prompt decodes. -/
def step1 (r : Req) (t : Nat) : Req :=
  if r.decode = true then r
  else if r.rem ≤ t then { r with decode := true, rem := 0 }
  else { r with rem := r.rem - t }

/-- The list after an iteration that served it `ts`. -/
def after : List Req → List (Nat × Nat) → List Req
  | [], _ => []
  | r :: rs, [] => r :: rs
  | r :: rs, t :: ts => step1 r t.2 :: after rs ts

/-- Every request is a prefill with prompt left. -/
def AllPrefill : List Req → Prop
  | [] => True
  | r :: rs => r.decode = false ∧ 0 < r.rem ∧ AllPrefill rs

/-- Every decode comes before every prefill (in admission order). -/
def Shaped : List Req → Prop
  | [] => True
  | r :: rs => (r.decode = true ∧ Shaped rs) ∨ (r.decode = false ∧ 0 < r.rem ∧ AllPrefill rs)

theorem ne_true {b : Bool} (h : b = false) : ¬(b = true) := by
  intro h'
  rw [h] at h'
  cases h'

/-! ## On a shaped list the two orders are one -/

theorem decoders_prefills_of_allPrefill : ∀ l : List Req,
    AllPrefill l → decoders l = [] ∧ prefills l = l
  | [], _ => ⟨rfl, rfl⟩
  | r :: rs, h => by
    obtain ⟨hd, _, hrs⟩ := h
    have ih := decoders_prefills_of_allPrefill rs hrs
    have hnd := ne_true hd
    constructor
    · simp only [decoders]
      rw [if_neg hnd]
      exact ih.1
    · simp only [prefills]
      rw [if_neg hnd, ih.2]

theorem shaped_of_allPrefill : ∀ l : List Req, AllPrefill l → Shaped l
  | [], _ => trivial
  | _ :: _, h => by
    obtain ⟨hd, hr, hrs⟩ := h
    exact Or.inr ⟨hd, hr, hrs⟩

theorem decodeFirst_eq : ∀ l : List Req, Shaped l → decodeFirst l = l
  | [], _ => rfl
  | r :: rs, h => by
    rcases h with ⟨hd, hs⟩ | ⟨hd, _, hp⟩
    · have ih := decodeFirst_eq rs hs
      simp only [decodeFirst] at ih ⊢
      simp only [decoders, prefills]
      rw [if_pos hd, if_pos hd, List.cons_append, ih]
    · have hdp := decoders_prefills_of_allPrefill rs hp
      have hnd := ne_true hd
      simp only [decodeFirst, decoders, prefills]
      rw [if_neg hnd, if_neg hnd, hdp.1, hdp.2, List.nil_append]

/-- Without a per-request chunk cap, serving in admission order is serving
decode-first: on a shaped list (which every iteration of a run sees,
`shaped_run`), the two orders give the same tokens to the same requests. -/
theorem serve_eq_decode_first (left : Nat) (l : List Req) (h : Shaped l) :
    serve 0 left (decodeFirst l) = serve 0 left l := by
  rw [decodeFirst_eq l h]

/-! ## Without a cap, an iteration keeps the shape -/

theorem take1_prefill_nocap (left : Nat) (r : Req) (hd : ¬(r.decode = true)) :
    take1 0 left r = (if r.rem ≤ left then r.rem else left) := by
  unfold take1 capTo
  rw [if_neg hd, if_pos (rfl : (0 : Nat) = 0)]

theorem step1_decode (r : Req) (t : Nat) (hd : r.decode = true) : step1 r t = r := by
  unfold step1
  rw [if_pos hd]

theorem step1_finish (r : Req) (t : Nat) (hd : ¬(r.decode = true)) (h : r.rem ≤ t) :
    step1 r t = { r with decode := true, rem := 0 } := by
  unfold step1
  rw [if_neg hd, if_pos h]

theorem step1_partial (r : Req) (t : Nat) (hd : ¬(r.decode = true)) (h : ¬(r.rem ≤ t)) :
    step1 r t = { r with rem := r.rem - t } := by
  unfold step1
  rw [if_neg hd, if_neg h]

/-- Prefills served with no budget left stay prefills with their prompt left. -/
theorem allPrefill_after_zero : ∀ l : List Req, AllPrefill l → AllPrefill (after l (serve 0 0 l))
  | [], _ => trivial
  | r :: rs, h => by
    obtain ⟨hd, hr, hrs⟩ := h
    have hnd := ne_true hd
    have h0 : ¬(r.rem ≤ 0) := by omega
    show AllPrefill (step1 r (take1 0 0 r) :: after rs (serve 0 (0 - take1 0 0 r) rs))
    rw [take1_prefill_nocap 0 r hnd, if_neg h0, step1_partial r 0 hnd h0]
    exact ⟨hd, by show 0 < r.rem - 0; omega, allPrefill_after_zero rs hrs⟩

/-- Without a per-request chunk cap, an iteration keeps a shaped list shaped:
a prefill that cannot finish takes all the budget left, so no prefill after
it gets a token, and none can finish before it. -/
theorem shaped_after : ∀ (l : List Req) (left : Nat), Shaped l → Shaped (after l (serve 0 left l))
  | [], _, _ => trivial
  | r :: rs, left, h => by
    show Shaped (step1 r (take1 0 left r) :: after rs (serve 0 (left - take1 0 left r) rs))
    rcases h with ⟨hd, hs⟩ | ⟨hd, hr, hp⟩
    · rw [step1_decode r _ hd]
      exact Or.inl ⟨hd, shaped_after rs _ hs⟩
    · have hnd := ne_true hd
      rw [take1_prefill_nocap left r hnd]
      by_cases hl : r.rem ≤ left
      · rw [if_pos hl, step1_finish r r.rem hnd (Nat.le_refl _)]
        exact Or.inl ⟨rfl, shaped_after rs _ (shaped_of_allPrefill rs hp)⟩
      · rw [if_neg hl, step1_partial r left hnd hl, Nat.sub_self]
        exact Or.inr ⟨hd, by show 0 < r.rem - left; omega, allPrefill_after_zero rs hp⟩

/-! ## Admissions, and a run -/

theorem allPrefill_append : ∀ l n : List Req, AllPrefill l → AllPrefill n → AllPrefill (l ++ n)
  | [], _, _, hn => hn
  | r :: rs, n, h, hn => by
    obtain ⟨hd, hr, hrs⟩ := h
    show AllPrefill (r :: (rs ++ n))
    exact ⟨hd, hr, allPrefill_append rs n hrs hn⟩

/-- Admitting prefills (at the end of the admission order) keeps the shape. -/
theorem shaped_append : ∀ l n : List Req, Shaped l → AllPrefill n → Shaped (l ++ n)
  | [], n, _, hn => shaped_of_allPrefill n hn
  | r :: rs, n, h, hn => by
    show Shaped (r :: (rs ++ n))
    rcases h with ⟨hd, hs⟩ | ⟨hd, hr, hp⟩
    · exact Or.inl ⟨hd, shaped_append rs n hs hn⟩
    · exact Or.inr ⟨hd, hr, allPrefill_append rs n hp hn⟩

/-- One iteration without a cap: admit `n` at the end, serve with budget `left`. -/
def iteration (left : Nat) (l n : List Req) : List Req :=
  after (l ++ n) (serve 0 left (l ++ n))

/-- A run: iterations, each with its budget and its admissions. -/
def runIters : List (Nat × List Req) → List Req → List Req
  | [], l => l
  | (left, n) :: its, l => runIters its (iteration left l n)

def AllAdmitted : List (Nat × List Req) → Prop
  | [] => True
  | (_, n) :: its => AllPrefill n ∧ AllAdmitted its

/-- Every iteration of a run without a per-request chunk cap, which admits
prefills, sees a shaped list. -/
theorem shaped_run : ∀ (its : List (Nat × List Req)) (l : List Req),
    Shaped l → AllAdmitted its → Shaped (runIters its l)
  | [], _, h, _ => h
  | (left, n) :: its, l, h, ha => by
    obtain ⟨hn, hits⟩ := ha
    exact shaped_run its (iteration left l n) (shaped_after (l ++ n) left (shaped_append l n h hn)) hits

/-- So, at every iteration of such a run (its admissions `n` included),
serving in admission order is serving decode-first. -/
theorem serve_eq_decode_first_run (its : List (Nat × List Req)) (l n : List Req) (left : Nat)
    (h : Shaped l) (ha : AllAdmitted its) (hn : AllPrefill n) :
    serve 0 left (decodeFirst (runIters its l ++ n)) = serve 0 left (runIters its l ++ n) :=
  serve_eq_decode_first left _ (shaped_append _ n (shaped_run its l h ha) hn)

/-! ## A chunk cap breaks it -/

/-- Two prefills, of 8 and 2 prompt tokens, admitted in that order. -/
def capExample : List Req :=
  [{ id := 0, decode := false, rem := 8 }, { id := 1, decode := false, rem := 2 }]

/-- After one iteration with a cap of 4 tokens per request and a budget of 10. -/
def capAfter : List Req :=
  after capExample (serve 4 10 capExample)

/-- With a per-request cap of 4, the second prefill finishes before the first:
request 1 decodes while request 0, admitted before it, still prefills; with a
budget of 1 the next iteration gives its token to request 0 in admission
order and to request 1 decode-first. -/
theorem chunk_cap_breaks_shape :
    capExample.map (fun r => r.decode) = [false, false] ∧
    capAfter.map (fun r => r.decode) = [false, true] ∧
    serve 4 1 capAfter = [(0, 1), (1, 0)] ∧
    serve 4 1 (decodeFirst capAfter) = [(1, 1), (0, 0)] := by
  decide

theorem capAfter_eq :
    capAfter = [{ id := 0, decode := false, rem := 4 }, { id := 1, decode := true, rem := 0 }] := by
  decide

theorem capExample_shaped : Shaped capExample :=
  Or.inr ⟨rfl, by decide, ⟨rfl, by decide, trivial⟩⟩

theorem capAfter_not_shaped : ¬ Shaped capAfter := by
  rw [capAfter_eq]
  intro h
  rcases h with ⟨h1, _⟩ | ⟨_, _, h2⟩
  · simp at h1
  · obtain ⟨h3, _, _⟩ := h2
    simp at h3

end Serq.Thm.Serve
