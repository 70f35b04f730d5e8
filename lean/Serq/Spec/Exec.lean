/-
  An executable semantics of the fragment (`Serq.Spec.Syntax`): the machine
  the oracle and claim theorems are about.

  Hand-written.  `leangen/exec_ref.py` is this file transcribed into Python,
  definition for definition (same names, same arguments, same cases, same
  fuel); `tests/leangen/test_exec_names.py` keeps the two lists of names
  equal, and the transcription is run on every oracle scenario against
  vLLM's outputs.

  The machine is event-driven, as the interpreter is (language reference,
  §Semantics):

  * sessions arrive in order, each at its time (the next arrival is
    scheduled as one arrives, before its session runs); the init block has
    run for each at the start, with the clock at its arrival time;
  * sessions run their statements in the order they became ready; a
    statement takes no time; a delay run and an iteration take time;
  * after every event the machine settles (the ready sessions run, the pools
    the engine does not admit admit their heads), then the idle engine starts
    an iteration if it has residents or a waiting queue it admits and no other
    event is pending at this instant;
  * a pool's queue offers its head: a session preempted back to it first
    (the most recent first), else the session of least queue keys (ties in
    join order; without keys, the first to join); that head, when it does
    not fit, blocks the rest;
  * an iteration serves the residents by the engine's serving keys
    (ascending, read once as the serving starts; ties in admission order),
    skipping those its `only` predicate reads as 0 at their turn (one token
    to a decode, up to the chunk to a prefill, never beyond the budget), a
    growing run first growing its hold block by block and preempting the
    resident admitted last that holds the pool while it does not fit (the
    grower itself included: then the serving stops); then, when its schedule
    admits and unless it preempted, it admits the heads of the queues it
    admits while budget is left and the head fits (used + max(units,
    reserve) ≤ cap, cached units never block; the first that does not fit
    stops the admissions), each served at once unless the admission's
    `only` reads it as 0;
  * an iteration lasts its cost, read on the batch as it starts; its tokens
    are applied when it ends, and the runs it finishes let their sessions go
    on in the residents' (admission) order; the step that only preempted is
    an iteration too;
  * a hold with a cache clause consumes at admission at most `reuse` units of
    the session's own cached prefix (the rest of that entry stays, dead), and
    leaves min(cache, computed) units cached at its end, rounded down to
    blocks; eviction takes one block from the tail of the least recently
    released entry (ties: release order);
  * a preempted hold releases its allocations caching its position, and its
    session queues again at the head of the hold's first pool, to execute the
    hold again with `computed` set to that position.

  Every recursion is structural, on a list or on an explicit fuel, so that
  `decide +kernel` evaluates it.
-/
import Serq.Spec.Syntax

namespace Serq.Exec

open Serq

/-! ## Machine states -/

/-- A cache entry: the owning session (`none`: dead), its units, its release
time and release order. -/
structure Entry where
  owner : Option Nat
  units : Nat
  time : Nat
  ord : Nat

/-- A pool: units allocated, cache entries in release order, queue (head first). -/
structure PoolSt where
  used : Nat
  cache : List Entry
  queue : List Nat

/-- A hold's allocation on one pool and its computed position there. -/
structure Alloc where
  pool : Nat
  units : Nat
  pos : Nat

/-- An admitted hold: its allocations, its cache clause, whether a growing
run advanced it, the number of frames below its body, its first pool. -/
structure HoldSt where
  allocs : List Alloc
  cache : Option Expr
  grown : Bool
  depth : Nat
  first : Nat

inductive Kind where
  | seq | loop | body

/-- A frame of a session's continuation: block, next statement, kind. -/
structure Frame where
  blk : Nat
  pc : Nat
  kind : Kind

/-- A run at the engine: its session, decode or prefill, work left, the pool
it grows, its session's admission number (the serving order), its work. -/
structure Job where
  sess : Nat
  decode : Bool
  rem : Nat
  grow : Option Nat
  key : Nat
  work : Nat

/-- `absent`: the session has not arrived yet. -/
inductive Status where
  | ready | queued | busy | ended | absent

/-- A session: attributes, continuation, holds, status, turn index,
admission number (0: never admitted), and whether a preemption put it back
at the head of its queue (`front`). -/
structure Sess where
  attrs : List Nat
  frames : List Frame
  holds : List HoldSt
  status : Status
  turnIx : Nat
  adm : Nat
  front : Bool

inductive Ev where
  | wake (s : Nat)
  | iterEnd (batch : List (Nat × Nat))
  | arrive (s : Nat)

structure Event where
  time : Nat
  ev : Ev

/-- What a claim over iterations reads, recorded as an iteration starts. -/
structure Iter where
  now : Nat
  tokens : Nat
  prefilled : Nat
  decoders : Nat
  residents : Nat
  kvDecode : Nat
  kvPrefill : Nat
  demand : Nat
  served : Nat
  arrived : Nat
  attention2 : Nat
  used : List Nat
  holders : List Nat
  queued : List Nat

structure Machine where
  now : Nat
  sess : List Sess
  pools : List PoolSt
  residents : List Job
  busy : Bool
  stalled : Bool
  events : List Event
  ord : Nat
  admc : Nat
  ready : List Nat
  obs : List (Nat × Nat × Nat)
  preempts : Nat
  served : Nat
  iters : List Iter

/-- An iteration being planned: budget left, chunk, batch (session, tokens),
whether serving stopped (a self-preemption), whether admission stopped, the
preemption count when it started. -/
structure Plan where
  left : Nat
  chunk : Nat
  batch : List (Nat × Nat)
  stop : Bool
  noAdmit : Bool
  pre0 : Nat

/-! ## Lists and naturals -/

def lget {α : Type} : List α → Nat → α → α
  | [], _, d => d
  | x :: _, 0, _ => x
  | _ :: xs, n + 1, d => lget xs n d

def lmod {α : Type} : List α → Nat → (α → α) → List α
  | [], _, _ => []
  | x :: xs, 0, f => f x :: xs
  | x :: xs, n + 1, f => x :: lmod xs n f

def lsum : List Nat → Nat
  | [] => 0
  | x :: xs => x + lsum xs

def roundUp (b n : Nat) : Nat :=
  if Nat.beq b 0 then n else (n + b - 1) / b * b

def roundDown (b n : Nat) : Nat :=
  if Nat.beq b 0 then n else n / b * b

def boolN (c : Bool) : Nat :=
  if c then 1 else 0

def nonzero (n : Nat) : Bool :=
  !(Nat.beq n 0)

def binOp : BinOp → Nat → Nat → Nat
  | .add, a, b => a + b
  | .sub, a, b => a - b
  | .mul, a, b => a * b
  | .lt, a, b => boolN (Nat.blt a b)
  | .le, a, b => boolN (Nat.ble a b)
  | .gt, a, b => boolN (Nat.blt b a)
  | .ge, a, b => boolN (Nat.ble b a)
  | .eq, a, b => boolN (Nat.beq a b)
  | .ne, a, b => boolN (!(Nat.beq a b))
  | .and, a, b => boolN (nonzero a && nonzero b)
  | .or, a, b => boolN (nonzero a || nonzero b)

def insertSorted (x : Nat) : List Nat → List Nat
  | [] => [x]
  | y :: ys => if Nat.ble x y then x :: y :: ys else y :: insertSorted x ys

def sortN : List Nat → List Nat
  | [] => []
  | x :: xs => insertSorted x (sortN xs)

/-- Σ_k (v_1 + … + v_k) over the list, `acc` the prefix before it. -/
def prefixSums (acc : Nat) : List Nat → Nat
  | [] => 0
  | x :: xs => acc + x + prefixSums (acc + x) xs

def filterS (s : Nat) : List (Nat × Nat) → List (Nat × Nat)
  | [] => []
  | x :: xs => if Nat.beq x.1 s then x :: filterS s xs else filterS s xs

/-! ## Pools -/

def cachedTotal : List Entry → Nat
  | [] => 0
  | e :: es => e.units + cachedTotal es

/-- What eviction can still take: the cached units and the entries. -/
def evictable (es : List Entry) : Nat :=
  cachedTotal es + es.length

def ownedBy : Option Nat → Nat → Bool
  | some t, s => Nat.beq t s
  | none, _ => false

/-- The units of session s's live cache entry. -/
def ownUnits : List Entry → Nat → Nat
  | [], _ => 0
  | e :: es, s => if ownedBy e.owner s = true then e.units else ownUnits es s

/-- Session s consumes `keep` units of its live entry: they leave the cache,
and the rest of the entry stays as a dead entry of the same age. -/
def killOwn : List Entry → Nat → Nat → List Entry
  | [], _, _ => []
  | e :: es, s, keep =>
    if ownedBy e.owner s = true then
      (if e.units - keep = 0 then es
       else { e with owner := none, units := e.units - keep } :: es)
    else e :: killOwn es s keep

/-- One block from the tail of the least recently released entry (the entries
are kept in release order); a whole entry when the pool has no block. -/
def evictOne (b : Nat) : List Entry → List Entry
  | [] => []
  | e :: es => if b = 0 ∨ e.units ≤ b then es else { e with units := e.units - b } :: es

/-- Evict until `need` units fit beside the allocations and the cache. -/
def makeRoom : Nat → Nat → Nat → Nat → PoolSt → PoolSt
  | 0, _, _, _, ps => ps
  | fuel + 1, cap, b, need, ps =>
    if ps.used + cachedTotal ps.cache + need ≤ cap ∨ ps.cache.isEmpty = true then ps
    else makeRoom fuel cap b need { ps with cache := evictOne b ps.cache }

/-- Allocate `need` units, evicting what is in the way. -/
def poolAlloc (cap b need : Nat) (ps : PoolSt) : PoolSt :=
  let ps1 := makeRoom (evictable ps.cache + 1) cap b need ps
  { ps1 with used := ps1.used + need }

def appendEntry : List Entry → Entry → List Entry
  | [], e => [e]
  | x :: xs, e => x :: appendEntry xs e

/-- Give back `units`, leaving `keep` cached as session s's live entry (its
earlier live entry, if any, dies). -/
def poolRelease (units keep s t o : Nat) (ps : PoolSt) : PoolSt :=
  { ps with used := ps.used - units,
            cache := if keep = 0 then ps.cache
                     else appendEntry (killOwn ps.cache s 0) { owner := some s, units := keep, time := t, ord := o } }

def defaultPool : Pool := { cap := 0, block := 0, viaEngine := false, keys := [] }

def emptyPool : PoolSt := { used := 0, cache := [], queue := [] }

def poolOf (p : Program) (i : Nat) : Pool :=
  lget p.pools i defaultPool

def pstOf (m : Machine) (i : Nat) : PoolSt :=
  lget m.pools i emptyPool

/-! ## Holds, sessions, expressions -/

def allocIn : List Alloc → Nat → Option Alloc
  | [], _ => none
  | a :: al, q => if Nat.beq a.pool q then some a else allocIn al q

/-- The allocation on pool q of the innermost hold that has one. -/
def allocOn : List HoldSt → Nat → Option Alloc
  | [], _ => none
  | h :: hs, q =>
    match allocIn h.allocs q with
    | some a => some a
    | none => allocOn hs q

def heldIn : List Alloc → Nat → Nat
  | [], _ => 0
  | a :: al, q => (if Nat.beq a.pool q then a.units else 0) + heldIn al q

/-- All the units a session holds on pool q. -/
def heldOn : List HoldSt → Nat → Nat
  | [], _ => 0
  | h :: hs, q => heldIn h.allocs q + heldOn hs q

def holdersOf : List Sess → Nat → Nat
  | [], _ => 0
  | x :: xs, q => boolN (Nat.blt 0 (heldOn x.holds q)) + holdersOf xs q

/-- ⌈a / b⌉ over ℕ (0 for b = 0). -/
def ceilDivN (a b : Nat) : Nat :=
  if Nat.beq b 0 then 0 else (a + b - 1) / b

/-- The residents that decode (`running.decoding`). -/
def decodersOf : List Job → Nat
  | [] => 0
  | j :: js => boolN j.decode + decodersOf js

/-- An expression for session s with attributes a, budget_left being bl. -/
def evalE (m : Machine) (a : List Nat) (s bl : Nat) : Expr → Nat
  | .num n => n
  | .attr i => lget a i 0
  | .now => m.now
  | .cachedIn q => ownUnits (pstOf m q).cache s
  | .budgetLeft => bl
  | .running => m.residents.length
  | .waiting q => (pstOf m q).queue.length
  | .min x y => Nat.min (evalE m a s bl x) (evalE m a s bl y)
  | .max x y => Nat.max (evalE m a s bl x) (evalE m a s bl y)
  | .bin op x y => binOp op (evalE m a s bl x) (evalE m a s bl y)
  | .floorDiv x y => evalE m a s bl x / evalE m a s bl y
  | .ceilDiv x y => ceilDivN (evalE m a s bl x) (evalE m a s bl y)
  | .cond c x y => if nonzero (evalE m a s bl c) then evalE m a s bl x else evalE m a s bl y
  | .lnot x => boolN (Nat.beq (evalE m a s bl x) 0)
  | .used q => (pstOf m q).used
  | .holders q => holdersOf m.sess q
  | .iter _ => 0
  | .agg _ _ => 0
  | .decoding => 0
  | .admission => 0
  | .remaining => 0
  | .runDecoding => decodersOf m.residents
  | .runKv _ => 0

/-- Reads only attributes and numbers (judged when the session queues). -/
def isStatic : Expr → Bool
  | .num _ => true
  | .attr _ => true
  | .min x y => isStatic x && isStatic y
  | .max x y => isStatic x && isStatic y
  | .floorDiv x y => isStatic x && isStatic y
  | .ceilDiv x y => isStatic x && isStatic y
  | .bin _ x y => isStatic x && isStatic y
  | .cond c x y => isStatic c && isStatic x && isStatic y
  | .lnot x => isStatic x
  | _ => false

def defaultSess : Sess :=
  { attrs := [], frames := [], holds := [], status := Status.ended, turnIx := 0, adm := 0, front := false }

def sessOf (m : Machine) (s : Nat) : Sess :=
  lget m.sess s defaultSess

def setSess (m : Machine) (s : Nat) (f : Sess → Sess) : Machine :=
  { m with sess := lmod m.sess s f }

def setPool (m : Machine) (i : Nat) (f : PoolSt → PoolSt) : Machine :=
  { m with pools := lmod m.pools i f }

def evalS (m : Machine) (s bl : Nat) (e : Expr) : Nat :=
  evalE m (sessOf m s).attrs s bl e

def setAttr (m : Machine) (s i v : Nat) : Machine :=
  setSess m s (fun x => { x with attrs := lmod x.attrs i (fun _ => v) })

def isReady : Status → Bool
  | .ready => true
  | _ => false

/-! ## Queues -/

/-- Lexicographic order on lists of keys (of one length). -/
def lexLt : List Nat → List Nat → Bool
  | x :: xs, y :: ys => Nat.blt x y || (Nat.beq x y && lexLt xs ys)
  | _, _ => false

/-- A queued session's keys, read with its attributes. -/
def keysOf (m : Machine) (s : Nat) : List Expr → List Nat
  | [] => []
  | e :: es => evalS m s 0 e :: keysOf m s es

/-- The session of least keys, `best` the least so far (ties: the earlier). -/
def leastKey (m : Machine) (ks : List Expr) (best : Nat) : List Nat → Nat
  | [] => best
  | s :: ss => if lexLt (keysOf m s ks) (keysOf m best ks) then leastKey m ks s ss else leastKey m ks best ss

/-- The head pool i's queue offers: a session preempted back to it (they
are at the front, the most recent first), else the least keys in join
order; the first to join when the pool has no keys. -/
def queueHead (p : Program) (m : Machine) (i : Nat) : List Nat → Option Nat
  | [] => none
  | s :: ss =>
    if (sessOf m s).front || (poolOf p i).keys.isEmpty then some s
    else some (leastKey m (poolOf p i).keys s ss)

/-! ## Events and residents -/

/-- Events in time order, a new one after those already at its time. -/
def insertEv (ev : Event) : List Event → List Event
  | [] => [ev]
  | e :: es => if Nat.blt ev.time e.time then ev :: e :: es else e :: insertEv ev es

/-- Residents in serving order: admission order, then arrival. -/
def insertJob (j : Job) : List Job → List Job
  | [] => [j]
  | k :: ks => if Nat.blt j.key k.key then j :: k :: ks else k :: insertJob j ks

def removeJob (s : Nat) : List Job → List Job
  | [] => []
  | j :: js => if Nat.beq j.sess s then js else j :: removeJob s js

def jobOf : List Job → Nat → Option Job
  | [], _ => none
  | j :: js, s => if Nat.beq j.sess s then some j else jobOf js s

def removeQ (s : Nat) : List Nat → List Nat
  | [] => []
  | x :: xs => if Nat.beq x s then xs else x :: removeQ s xs

/-! ## Releasing holds -/

def slotTurnNo : Nat := 1
def slotCached : Nat := 2
def slotComputed : Nat := 3
def slotMore : Nat := 7

/-- Give back each allocation, caching min(ℓ, computed) rounded down to
blocks (`keepL` none: no cache clause); computed is the position when `pos`,
else the allocation. -/
def releaseAllocs (p : Program) (m : Machine) (s : Nat) (keepL : Option Nat) (pos : Bool) :
    List Alloc → Machine
  | [] => m
  | a :: al =>
    let b := (poolOf p a.pool).block
    let keep := match keepL with
      | some l => Nat.min a.units (roundDown b (Nat.min l (if pos then a.pos else a.units)))
      | none => 0
    let m1 := setPool m a.pool (poolRelease a.units keep s m.now m.ord)
    let m2 := if Nat.beq keep 0 then m1 else { m1 with ord := m1.ord + 1 }
    releaseAllocs p m2 s keepL pos al

/-- The end of a hold's scope, or its preemption (then every pool caches its
position). -/
def releaseHold (p : Program) (m : Machine) (s : Nat) (h : HoldSt) (preempted : Bool) : Machine :=
  let keepL := match h.cache with
    | some e => some (evalS m s 0 e)
    | none => none
  releaseAllocs p m s keepL (preempted || h.grown) h.allocs

/-- `end`: every hold, innermost first. -/
def releaseAll : Nat → Program → Machine → Nat → Machine
  | 0, _, m, _ => m
  | fuel + 1, p, m, s =>
    match (sessOf m s).holds with
    | [] => m
    | h :: _ =>
      let m1 := setSess m s (fun x => { x with holds := x.holds.drop 1 })
      releaseAll fuel p (releaseHold p m1 s h false) s

def endSess (p : Program) (m : Machine) (s : Nat) : Machine :=
  let m1 := releaseAll (sessOf m s).holds.length p m s
  let m2 := { m1 with residents := removeJob s m1.residents }
  setSess m2 s (fun x => { x with status := Status.ended, frames := [], holds := [] })

/-! ## Admission -/

/-- Each pool's (units, max(units, reserve)) as the hold's header reads now. -/
def headerVals (m : Machine) (s bl : Nat) : List HoldPool → List (Nat × Nat × Nat)
  | [] => []
  | hp :: hps =>
    let u := evalS m s bl hp.units
    let r := match hp.reserve with
      | some e => evalS m s bl e
      | none => u
    (hp.pool, u, Nat.max u r) :: headerVals m s bl hps

def fits (p : Program) (m : Machine) : List (Nat × Nat × Nat) → Bool
  | [] => true
  | (q, _, r) :: vs =>
    Nat.ble ((pstOf m q).used + roundUp (poolOf p q).block r) (poolOf p q).cap && fits p m vs

/-- A unit or reserve reading only attributes and numbers that asks for more
than the cap: the hold can never fit, and the session ends. -/
def rejects (p : Program) (m : Machine) (s : Nat) : List HoldPool → Bool
  | [] => false
  | hp :: hps =>
    let cap := (poolOf p hp.pool).cap
    let b := (poolOf p hp.pool).block
    let badU := isStatic hp.units && Nat.blt cap (roundUp b (evalS m s 0 hp.units))
    let badR := match hp.reserve with
      | some e => isStatic e && Nat.blt cap (roundUp b (evalS m s 0 e))
      | none => false
    badU || badR || rejects p m s hps

/-- Allocate each pool's units, consuming the session's own cached prefix
first when the hold caches; the allocations, and the most consumed on a pool. -/
def takeAllocs (p : Program) (m : Machine) (s rho : Nat) (caching : Bool) :
    List (Nat × Nat × Nat) → Machine × List Alloc × Nat
  | [] => (m, [], 0)
  | (q, u, _) :: vs =>
    let b := (poolOf p q).block
    let ps := pstOf m q
    let took := if caching then roundDown b (Nat.min rho (ownUnits ps.cache s)) else 0
    let units := Nat.max (roundUp b u) took
    let ps1 := if caching then { ps with cache := killOwn ps.cache s took } else ps
    let m1 := setPool m q (fun _ => poolAlloc (poolOf p q).cap b units ps1)
    match takeAllocs p m1 s rho caching vs with
    | (m2, al, c) => (m2, { pool := q, units := units, pos := took } :: al, Nat.max took c)

/-- Admit session s's hold (its top frame is at the hold statement). -/
def admitHold (p : Program) (m : Machine) (s bl : Nat) (reuse cache : Option Expr) (body : Nat)
    (vs : List (Nat × Nat × Nat)) : Machine :=
  let caching := cache.isSome
  let rho := match reuse with
    | some e => evalS m s bl e
    | none => 0
  match takeAllocs p m s rho caching vs with
  | (m1, al, took) =>
    let x := sessOf m1 s
    let first := match vs with
      | (q, _, _) :: _ => q
      | [] => 0
    let h : HoldSt := { allocs := al, cache := cache, grown := false, depth := x.frames.length,
                        first := first }
    let bodyFrame : Frame := { blk := body, pc := 0, kind := Kind.body }
    let frames := match x.frames with
      | f :: fs => bodyFrame :: { f with pc := f.pc + 1 } :: fs
      | [] => [bodyFrame]
    let x1 := { x with attrs := lmod x.attrs slotCached (fun _ => if caching then took else 0),
                       frames := frames, holds := h :: x.holds, status := Status.ready, adm := m1.admc,
                       front := false }
    let m2 := setSess m1 s (fun _ => x1)
    { m2 with admc := m1.admc + 1 }

/-- The hold statement session s waits at. -/
def holdAt (p : Program) (m : Machine) (s : Nat) :
    Option (List HoldPool × Nat × Option Expr × Option Expr) :=
  match (sessOf m s).frames with
  | [] => none
  | f :: _ =>
    match lget (lget p.blocks f.blk []) f.pc Stmt.stop with
    | .hold hps body reuse cache => some (hps, body, reuse, cache)
    | _ => none

/-! ## Preemption and growth -/

/-- Release the session's holds, innermost first, through the innermost one
with an allocation on pool q, each caching its position; that hold. -/
def dropHolds : Nat → Program → Machine → Nat → Nat → Machine × Option HoldSt
  | 0, _, m, _, _ => (m, none)
  | fuel + 1, p, m, s, q =>
    match (sessOf m s).holds with
    | [] => (m, none)
    | h :: _ =>
      let m1 := setSess m s (fun x => { x with holds := x.holds.drop 1 })
      let m2 := releaseHold p m1 s h true
      match allocIn h.allocs q with
      | some _ => (m2, some h)
      | none => dropHolds fuel p m2 s q

/-- Preempt session v, a holder of pool q: its job leaves the engine, its
holds through the one on q are released caching their positions, and it
queues again at the head of that hold's first pool, to execute it again
with `computed` set to its position. -/
def preempt (p : Program) (m : Machine) (v q : Nat) : Machine :=
  let x := sessOf m v
  let pos := match allocOn x.holds q with
    | some a => a.pos
    | none => 0
  match dropHolds x.holds.length p m v q with
  | (m1, none) => m1
  | (m1, some h) =>
    let y := sessOf m1 v
    let keep := y.frames.drop (y.frames.length - h.depth)
    let frames := match keep with
      | f :: fs => { f with pc := f.pc - 1 } :: fs
      | [] => []
    let m2 := setSess m1 v (fun z => { z with attrs := lmod z.attrs slotComputed (fun _ => pos),
                                              frames := frames, status := Status.queued, front := true })
    let m3 := setPool m2 h.first (fun ps => { ps with queue := v :: ps.queue })
    { m3 with residents := removeJob v m3.residents, preempts := m3.preempts + 1 }

/-- The resident admitted last that holds pool q. -/
def lastHolder (m : Machine) (q : Nat) : List Job → Option Nat
  | [] => none
  | j :: js =>
    match lastHolder m q js with
    | some v => some v
    | none => if Nat.blt 0 (heldOn (sessOf m j.sess).holds q) then some j.sess else none

def batchOf : List (Nat × Nat) → Nat → Nat
  | [], _ => 0
  | x :: xs, v => (if Nat.beq x.1 v then x.2 else 0) + batchOf xs v

def dropBatch : List (Nat × Nat) → Nat → List (Nat × Nat)
  | [], _ => []
  | x :: xs, v => if Nat.beq x.1 v then dropBatch xs v else x :: dropBatch xs v

/-- A victim the iteration has served leaves the batch; its tokens return. -/
def unbatch (v : Nat) (pl : Plan) : Plan :=
  { pl with left := pl.left + batchOf pl.batch v, batch := dropBatch pl.batch v }

def growAlloc : List Alloc → Nat → Nat → List Alloc
  | [], _, _ => []
  | a :: al, q, need => if Nat.beq a.pool q then { a with units := a.units + need } :: al
                        else a :: growAlloc al q need

def growIn : List HoldSt → Nat → Nat → List HoldSt
  | [], _, _ => []
  | h :: hs, q, need =>
    match allocIn h.allocs q with
    | some _ => { h with allocs := growAlloc h.allocs q need } :: hs
    | none => h :: growIn hs q need

def advanceAlloc : List Alloc → Nat → Nat → List Alloc
  | [], _, _ => []
  | a :: al, q, n => if Nat.beq a.pool q then { a with pos := a.pos + n } :: al
                     else a :: advanceAlloc al q n

/-- A growing run's tokens: its hold's position on q advances. -/
def advanceIn : List HoldSt → Nat → Nat → List HoldSt
  | [], _, _ => []
  | h :: hs, q, n =>
    match allocIn h.allocs q with
    | some _ => { h with allocs := advanceAlloc h.allocs q n, grown := true } :: hs
    | none => h :: advanceIn hs q n

/-- Grow session s's innermost hold on q by `need` units, preempting the
resident admitted last that holds q while it does not fit.  The result says
whether s itself was preempted (or could not grow). -/
def growTo : Nat → Program → Machine → Plan → Nat → Nat → Nat → Machine × Plan × Bool
  | 0, _, m, pl, _, _, _ => (m, pl, true)
  | fuel + 1, p, m, pl, s, q, need =>
    let pd := poolOf p q
    let ps := pstOf m q
    if Nat.ble (ps.used + need) pd.cap then
      let m1 := setPool m q (poolAlloc pd.cap pd.block need)
      (setSess m1 s (fun x => { x with holds := growIn x.holds q need }), pl, false)
    else
      match lastHolder m q m.residents with
      | none => (m, pl, true)
      | some v =>
        let m1 := preempt p m v q
        let pl1 := unbatch v pl
        if Nat.beq v s then (m1, pl1, true) else growTo fuel p m1 pl1 s q need


/-! ## Running a session -/

def setMany (a : List Nat) : List (Nat × Nat) → List Nat
  | [] => a
  | (i, v) :: kvs => setMany (lmod a i (fun _ => v)) kvs

def noSession : Session := { attrs := [], turns := [], preset := false }

/-- `turn`: the turn number counts up; a session with preset turns takes the
next one's attributes, and `more` says whether another remains. -/
def doTurn (p : Program) (m : Machine) (s : Nat) : Machine :=
  let x := sessOf m s
  let a := lmod x.attrs slotTurnNo (fun v => v + 1)
  let spec := lget p.sessions s noSession
  if spec.preset then
    if Nat.blt x.turnIx spec.turns.length then
      let a1 := setMany a (lget spec.turns x.turnIx [])
      let a2 := lmod a1 slotMore (fun _ => boolN (Nat.blt (x.turnIx + 1) spec.turns.length))
      setSess m s (fun y => { y with attrs := a2, turnIx := x.turnIx + 1 })
    else setSess m s (fun y => { y with attrs := lmod a slotMore (fun _ => 0) })
  else setSess m s (fun y => { y with attrs := a })

def bumpPc : List Frame → List Frame
  | [] => []
  | f :: fs => { f with pc := f.pc + 1 } :: fs

/-- The session's statement is done: its top frame moves on. -/
def advance (m : Machine) (s : Nat) : Machine :=
  setSess m s (fun x => { x with frames := bumpPc x.frames })

def push (m : Machine) (s : Nat) (f : Frame) : Machine :=
  setSess m s (fun x => { x with frames := f :: x.frames })

def setStatus (m : Machine) (s : Nat) (st : Status) : Machine :=
  setSess m s (fun x => { x with status := st })

def isDecode : Mode → Bool
  | .decode => true
  | _ => false

/-- One statement of a ready session: the machine, and whether the session is
still ready. -/
def execStmt (p : Program) (m : Machine) (s : Nat) : Stmt → Machine × Bool
  | .turn => (advance (doTurn p m s) s, true)
  | .set i e => (advance (setAttr m s i (evalS m s 0 e)) s, true)
  | .observe o e => (advance { m with obs := (o, s, evalS m s 0 e) :: m.obs } s, true)
  | .hold hps _ _ _ =>
    if rejects p m s hps then (endSess p m s, false)
    else
      let q := match hps with
        | hp :: _ => hp.pool
        | [] => 0
      let m1 := setPool m q (fun ps => { ps with queue := ps.queue ++ [s] })
      (setStatus m1 s Status.queued, false)
  | .run stage mode work grow =>
    let w := evalS m s 0 work
    let m1 := advance m s
    if Nat.beq w 0 then (m1, true)
    else if Nat.beq stage 0 then
      let j : Job := { sess := s, decode := isDecode mode, rem := w, grow := grow, key := (sessOf m1 s).adm,
                       work := w }
      (setStatus { m1 with residents := insertJob j m1.residents } s Status.busy, false)
    else
      let ev : Event := { time := m1.now + w, ev := Ev.wake s }
      (setStatus { m1 with events := insertEv ev m1.events } s Status.busy, false)
  | .branch g thn els =>
    let m1 := advance m s
    if nonzero (evalS m s 0 g) then (push m1 s { blk := thn, pc := 0, kind := Kind.seq }, true)
    else
      match els with
      | some e => (push m1 s { blk := e, pc := 0, kind := Kind.seq }, true)
      | none => (m1, true)
  | .loop b => (push (advance m s) s { blk := b, pc := 0, kind := Kind.loop }, true)
  | .stop => (endSess p m s, false)

/-- The end of the top frame's block: a loop starts again, a hold's body
releases the hold (and `computed` is 0 again), a branch returns. -/
def blockEnd (p : Program) (m : Machine) (s : Nat) (f : Frame) : Machine :=
  match f.kind with
  | .loop => setSess m s (fun x => { x with frames := { f with pc := 0 } :: x.frames.drop 1 })
  | .body =>
    let x := sessOf m s
    let m1 := setSess m s (fun y => { y with frames := y.frames.drop 1, holds := y.holds.drop 1 })
    match x.holds with
    | h :: _ => setAttr (releaseHold p m1 s h false) s slotComputed 0
    | [] => m1
  | .seq => setSess m s (fun x => { x with frames := x.frames.drop 1 })

/-- Run a ready session until it waits (the end of its session block ends it). -/
def runSess : Nat → Program → Machine → Nat → Machine
  | 0, _, m, _ => m
  | fuel + 1, p, m, s =>
    let x := sessOf m s
    if !(isReady x.status) then m
    else
      match x.frames with
      | [] => setStatus m s Status.ended
      | f :: _ =>
        let stmts := lget p.blocks f.blk []
        if Nat.ble stmts.length f.pc then runSess fuel p (blockEnd p m s f) s
        else
          match execStmt p m s (lget stmts f.pc Stmt.stop) with
          | (m1, go) => if go then runSess fuel p m1 s else m1

/-! ## The iteration -/

/-- What a session holds on the engine's memory. -/
def memAlloc (p : Program) (m : Machine) (s : Nat) : Nat :=
  match p.engine.memory with
  | some q => heldOn (sessOf m s).holds q
  | none => 0

/-- `running.kv_decode` (`d`) or `running.kv_prefill`: what the residents
that decode (or not) hold on the engine's memory. -/
def kvOf (p : Program) (m : Machine) (d : Bool) : List Job → Nat
  | [] => 0
  | j :: js => (if j.decode == d then memAlloc p m j.sess else 0) + kvOf p m d js

/-- An `only` predicate or a serving key, read for resident j at its turn:
its attributes, `decoding`, `admission`, `remaining`, and the residents as
they stand (`running.count`, `running.decoding`, `running.kv_…`). -/
def evalJ (p : Program) (m : Machine) (j : Job) : Expr → Nat
  | .num n => n
  | .attr i => lget (sessOf m j.sess).attrs i 0
  | .decoding => boolN j.decode
  | .admission => j.key
  | .remaining => j.rem
  | .running => m.residents.length
  | .runDecoding => decodersOf m.residents
  | .runKv d => kvOf p m d m.residents
  | .min x y => Nat.min (evalJ p m j x) (evalJ p m j y)
  | .max x y => Nat.max (evalJ p m j x) (evalJ p m j y)
  | .bin op x y => binOp op (evalJ p m j x) (evalJ p m j y)
  | .floorDiv x y => evalJ p m j x / evalJ p m j y
  | .ceilDiv x y => ceilDivN (evalJ p m j x) (evalJ p m j y)
  | .cond c x y => if nonzero (evalJ p m j c) then evalJ p m j x else evalJ p m j y
  | .lnot x => boolN (Nat.beq (evalJ p m j x) 0)
  | _ => 0

/-- Whether the predicate (none: every request) lets resident j be served. -/
def onlyOk (p : Program) (m : Machine) (j : Job) : Option Expr → Bool
  | none => true
  | some e => nonzero (evalJ p m j e)

def jobKeys (p : Program) (m : Machine) (j : Job) : List Expr → List Nat
  | [] => []
  | e :: es => evalJ p m j e :: jobKeys p m j es

/-- Insert after every item whose keys are not greater (a stable sort). -/
def insertKeyed (x : List Nat × Nat) : List (List Nat × Nat) → List (List Nat × Nat)
  | [] => [x]
  | y :: ys => if lexLt x.1 y.1 then x :: y :: ys else y :: insertKeyed x ys

def sortKeyed (acc : List (List Nat × Nat)) : List (List Nat × Nat) → List (List Nat × Nat)
  | [] => acc
  | x :: xs => sortKeyed (insertKeyed x acc) xs

def keyedJobs (p : Program) (m : Machine) : List Job → List (List Nat × Nat)
  | [] => []
  | j :: js => (jobKeys p m j p.engine.keys, j.sess) :: keyedJobs p m js

def seconds : List (List Nat × Nat) → List Nat
  | [] => []
  | x :: xs => x.2 :: seconds xs

/-- The residents' sessions in serving order: ascending serving keys, read
once as the serving starts, ties in admission order (the residents' order);
without keys, admission order. -/
def serveOrder (p : Program) (m : Machine) : List Nat :=
  seconds (sortKeyed [] (keyedJobs p m m.residents))

/-- The tokens a resident asks for: one for a decode, up to the chunk for a
prefill, never more than the budget left. -/
def want (pl : Plan) (j : Job) : Nat :=
  let w := if j.decode then 1 else (if nonzero pl.chunk then Nat.min j.rem pl.chunk else j.rem)
  Nat.min (Nat.min w j.rem) pl.left

def addBatch (pl : Plan) (s n : Nat) : Plan :=
  { pl with left := pl.left - n, batch := pl.batch ++ [(s, n)] }

/-- Serve one resident, growing its hold first when its run grows one. -/
def serveJob (k : Nat) (p : Program) (m : Machine) (pl : Plan) (j : Job) : Machine × Plan :=
  let n := want pl j
  if Nat.beq n 0 then (m, pl)
  else
    match j.grow with
    | none => (m, addBatch pl j.sess n)
    | some q =>
      match allocOn (sessOf m j.sess).holds q with
      | none => (m, addBatch pl j.sess n)
      | some a =>
        if Nat.ble (a.pos + n) a.units then (m, addBatch pl j.sess n)
        else
          let r := growTo k p m pl j.sess q (roundUp (poolOf p q).block (a.pos + n) - a.units)
          if r.2.2 then (r.1, { r.2.1 with stop := true }) else (r.1, addBatch r.2.1 j.sess n)

/-- Serve the residents in order (a snapshot of their sessions), until the
budget is spent or a grower preempted itself; one the `only` predicate
reads as 0 at its turn is passed over. -/
def serveAll (k : Nat) (p : Program) : Machine → Plan → List Nat → Machine × Plan
  | m, pl, [] => (m, pl)
  | m, pl, s :: ss =>
    if pl.stop || Nat.beq pl.left 0 then (m, pl)
    else
      match jobOf m.residents s with
      | some j =>
        if Nat.beq (batchOf pl.batch s) 0 && onlyOk p m j p.engine.serveOnly then
          let r := serveJob k p m pl j
          serveAll k p r.1 r.2 ss
        else serveAll k p m pl ss
      | none => serveAll k p m pl ss

/-- The head of the first non-empty queue the engine admits. -/
def engineHead (p : Program) (m : Machine) (i : Nat) : List PoolSt → Option (Nat × Nat)
  | [] => none
  | ps :: pss =>
    match queueHead p m i ps.queue with
    | some s => if (poolOf p i).viaEngine then some (i, s) else engineHead p m (i + 1) pss
    | none => engineHead p m (i + 1) pss

/-- What `budget_left(engine)` reads in the header of a hold the engine
admits: the tokens the iteration can still give that request, the budget
left within the chunk (vLLM schedules `min(threshold, token_budget)` tokens
for a waiting request and allocates only those, scheduler.py:1332-1339). -/
def admitBudget (pl : Plan) : Nat :=
  if nonzero pl.chunk then Nat.min pl.left pl.chunk else pl.left

/-- Admit heads while budget is left, no one was preempted in this iteration,
and the head fits; each newcomer runs its statements at once and is served
unless the admission's `only` predicate reads it as 0. -/
def admitLoop : Nat → Nat → Program → Machine → Plan → Machine × Plan
  | 0, _, _, m, pl => (m, pl)
  | fuel + 1, k, p, m, pl =>
    if pl.noAdmit || !(Nat.beq m.preempts pl.pre0) || Nat.beq pl.left 0 then (m, pl)
    else
      match engineHead p m 0 m.pools with
      | none => (m, pl)
      | some (q, s) =>
        match holdAt p m s with
        | none => (m, { pl with noAdmit := true })
        | some (hps, body, reuse, cache) =>
          let bl := admitBudget pl
          let vs := headerVals m s bl hps
          if fits p m vs then
            let m1 := setPool m q (fun x => { x with queue := removeQ s x.queue })
            let m2 := runSess k p (admitHold p m1 s bl reuse cache body vs) s
            match jobOf m2.residents s with
            | some j =>
              if Nat.beq (batchOf pl.batch s) 0 && onlyOk p m2 j p.engine.admitOnly then
                let r := serveJob k p m2 pl j
                admitLoop fuel k p r.1 r.2
              else admitLoop fuel k p m2 pl
            | none => admitLoop fuel k p m2 pl
          else (m, { pl with noAdmit := true })

def batchSum : List (Nat × Nat) → Nat
  | [] => 0
  | x :: xs => x.2 + batchSum xs

def jobDecode (m : Machine) (s : Nat) : Bool :=
  match jobOf m.residents s with
  | some j => j.decode
  | none => false

/-- The batch's prefilled tokens, decoders, kv_decode and kv_prefill. -/
def statBatch (p : Program) (m : Machine) : List (Nat × Nat) → Nat × Nat × Nat × Nat
  | [] => (0, 0, 0, 0)
  | (s, n) :: bt =>
    match statBatch p m bt with
    | (pre, dec, kvd, kvp) =>
      if jobDecode m s then (pre, dec + 1, kvd + memAlloc p m s, kvp)
      else (pre + n, dec, kvd, kvp + memAlloc p m s)

/-- The tokens the residents could take with an unlimited budget. -/
def demandOf (pl : Plan) : List Job → Nat
  | [] => 0
  | j :: js =>
    let d := if j.decode then Nat.min 1 j.rem else (if nonzero pl.chunk then Nat.min j.rem pl.chunk else j.rem)
    d + demandOf pl js

/-- A prefill's position as the iteration starts: its hold's position on the
pool it grows, else the work its run has done. -/
def jobPos (m : Machine) (j : Job) : Nat :=
  match j.grow with
  | some q =>
    match allocOn (sessOf m j.sess).holds q with
    | some a => a.pos
    | none => j.work - j.rem
  | none => j.work - j.rem

/-- Twice `batch.attention`: Σ n (2 k₀ + n) over the batch's prefills, k₀
the position it starts at. -/
def attention2Of (m : Machine) : List (Nat × Nat) → Nat
  | [] => 0
  | (s, n) :: bt =>
    (match jobOf m.residents s with
     | some j => if j.decode then 0 else n * (2 * jobPos m j + n)
     | none => 0) + attention2Of m bt

/-- The sessions that have arrived. -/
def arrivedOf : List Sess → Nat
  | [] => 0
  | x :: xs => (match x.status with
                | .absent => 0
                | _ => 1) + arrivedOf xs

def poolStats (m : Machine) (i : Nat) : List PoolSt → List Nat × List Nat × List Nat
  | [] => ([], [], [])
  | ps :: pss =>
    match poolStats m (i + 1) pss with
    | (u, h, q) => (ps.used :: u, holdersOf m.sess i :: h, ps.queue.length :: q)

def iterRec (p : Program) (m : Machine) (pl : Plan) : Iter :=
  match statBatch p m pl.batch with
  | (pre, dec, kvd, kvp) =>
    match poolStats m 0 m.pools with
    | (u, h, q) =>
      { now := m.now, tokens := batchSum pl.batch, prefilled := pre, decoders := dec,
        residents := m.residents.length, kvDecode := kvd, kvPrefill := kvp,
        demand := demandOf pl m.residents, served := m.served, arrived := arrivedOf m.sess,
        attention2 := attention2Of m pl.batch, used := u, holders := h, queued := q }

def iterVar (r : Iter) : IterVar → Nat
  | .tokens => r.tokens
  | .prefilled => r.prefilled
  | .decoders => r.decoders
  | .residents => r.residents
  | .kvDecode => r.kvDecode
  | .kvPrefill => r.kvPrefill
  | .demand => r.demand
  | .served => r.served
  | .arrived => r.arrived
  | .attention2 => r.attention2

/-- An expression of an iteration, as it starts: the engine's cost, a
claim over iterations. -/
def evalI (r : Iter) : Expr → Nat
  | .num n => n
  | .now => r.now
  | .iter v => iterVar r v
  | .used q => lget r.used q 0
  | .holders q => lget r.holders q 0
  | .waiting q => lget r.queued q 0
  | .min x y => Nat.min (evalI r x) (evalI r y)
  | .max x y => Nat.max (evalI r x) (evalI r y)
  | .bin op x y => binOp op (evalI r x) (evalI r y)
  | .floorDiv x y => evalI r x / evalI r y
  | .ceilDiv x y => ceilDivN (evalI r x) (evalI r y)
  | .cond c x y => if nonzero (evalI r c) then evalI r x else evalI r y
  | .lnot x => boolN (Nat.beq (evalI r x) 0)
  | _ => 0

/-- The schedule's admission, when it has one. -/
def admitIf (k : Nat) (p : Program) (m : Machine) (pl : Plan) : Machine × Plan :=
  if p.engine.admits then admitLoop k k p m pl else (m, pl)

/-- An iteration of the engine: serve the residents in serving order, then
admit (when the schedule does) unless the iteration preempted.  An attempt
that schedules nothing and preempts nobody is no iteration (the engine waits
for the next event); an iteration lasts its cost, read on the batch as it
starts, and its tokens are applied when it ends. -/
def attempt (k : Nat) (p : Program) (m : Machine) : Machine :=
  let budget := evalE m [] 0 0 p.engine.budget
  let chunk := evalE m [] 0 0 p.engine.chunk
  let pl0 : Plan := { left := budget, chunk := chunk, batch := [], stop := false, noAdmit := false,
                      pre0 := m.preempts }
  match serveAll k p m pl0 (serveOrder p m) with
  | (m1, pl1) =>
    match admitIf k p m1 pl1 with
    | (m2, pl2) =>
      if pl2.batch.isEmpty && Nat.beq m2.preempts pl2.pre0 then { m2 with stalled := true }
      else
        let r := iterRec p m2 pl2
        let ev : Event := { time := m2.now + evalI r p.engine.cost, ev := Ev.iterEnd pl2.batch }
        { m2 with busy := true, events := insertEv ev m2.events,
                  served := m2.served + batchSum pl2.batch, iters := r :: m2.iters }

def updJob : List Job → Nat → Nat → List Job
  | [], _, _ => []
  | j :: js, s, rem => if Nat.beq j.sess s then { j with rem := rem } :: js else j :: updJob js s rem

/-- The end of an iteration: each run of the batch advances (and its hold's
position). -/
def finishJobs (m : Machine) : List (Nat × Nat) → Machine
  | [] => m
  | (s, n) :: bt =>
    match jobOf m.residents s with
    | none => finishJobs m bt
    | some j =>
      let m1 := match j.grow with
        | some q => setSess m s (fun x => { x with holds := advanceIn x.holds q n })
        | none => m
      finishJobs { m1 with residents := updJob m1.residents s (j.rem - n) } bt

/-- Then each run whose work is done leaves the engine and lets its session
go on, in the residents' order (a snapshot of them). -/
def doneJobs (m : Machine) : List Job → Machine
  | [] => m
  | j :: js =>
    if Nat.beq j.rem 0 then
      doneJobs (setStatus { m with residents := removeJob j.sess m.residents, ready := m.ready ++ [j.sess] }
                  j.sess Status.ready) js
    else doneJobs m js

def endIteration (m : Machine) (bt : List (Nat × Nat)) : Machine :=
  let m1 := finishJobs { m with busy := false } bt
  doneJobs m1 m1.residents

/-! ## Settling, events, the run -/

/-- A session at the head of a pool the engine does not admit, whose hold
fits now. -/
def freeHead (p : Program) (m : Machine) (i : Nat) :
    List PoolSt → Option (Nat × Nat × (List HoldPool × Nat × Option Expr × Option Expr))
  | [] => none
  | ps :: pss =>
    match queueHead p m i ps.queue with
    | some s =>
      if (poolOf p i).viaEngine then freeHead p m (i + 1) pss
      else
        match holdAt p m s with
        | some h => if fits p m (headerVals m s 0 h.1) then some (i, s, h) else freeHead p m (i + 1) pss
        | none => freeHead p m (i + 1) pss
    | none => freeHead p m (i + 1) pss

/-- Run the ready sessions in order, then admit at the pools the engine does
not admit, until nothing changes. -/
def settle : Nat → Nat → Program → Machine → Machine
  | 0, _, _, m => m
  | fuel + 1, k, p, m =>
    match m.ready with
    | s :: rest => settle fuel k p (runSess k p { m with ready := rest } s)
    | [] =>
      match freeHead p m 0 m.pools with
      | none => m
      | some (q, s, (hps, body, reuse, cache)) =>
        let vs := headerVals m s 0 hps
        let m1 := setPool m q (fun x => { x with queue := removeQ s x.queue })
        let m2 := admitHold p m1 s 0 reuse cache body vs
        settle fuel k p { m2 with ready := m2.ready ++ [s] }

def engineWaiting (p : Program) (i : Nat) : List PoolSt → Bool
  | [] => false
  | ps :: pss => ((poolOf p i).viaEngine && !ps.queue.isEmpty) || engineWaiting p (i + 1) pss

def pendingNow (m : Machine) : Bool :=
  match m.events with
  | e :: _ => Nat.beq e.time m.now
  | [] => false

/-- An idle engine with residents or a waiting queue it admits starts an
iteration once no other event is pending at this instant. -/
def canStart (p : Program) (m : Machine) : Bool :=
  !m.busy && !m.stalled && !(pendingNow m) && (!m.residents.isEmpty || engineWaiting p 0 m.pools)

/-- Session s's arrival, scheduled at its time (not before the clock). -/
def arrival (p : Program) (m : Machine) (s : Nat) : Machine :=
  if Nat.blt s p.sessions.length then
    let ev : Event := { time := Nat.max m.now (lget p.sessions s noSession).arrive, ev := Ev.arrive s }
    { m with events := insertEv ev m.events }
  else m

def handle (p : Program) (m : Machine) : Ev → Machine
  | .wake s => setStatus { m with ready := m.ready ++ [s] } s Status.ready
  | .iterEnd bt => endIteration m bt
  | .arrive s => setStatus { (arrival p m (s + 1)) with ready := m.ready ++ [s] } s Status.ready

/-- Settle, start an iteration if one can start, take the next event. -/
def drive : Nat → Nat → Program → Machine → Machine
  | 0, _, _, m => m
  | fuel + 1, k, p, m =>
    let m1 := settle k k p m
    let m2 := if canStart p m1 then attempt k p m1 else m1
    match m2.events with
    | [] => m2
    | e :: es => drive fuel k p (handle p { m2 with events := es, now := e.time, stalled := false } e.ev)

/-- The init block's sets (the fragment allows nothing else there). -/
def initBlock (m0 : Machine) (s : Nat) (a : List Nat) : List Stmt → List Nat
  | [] => a
  | (Stmt.set i e) :: sts => initBlock m0 s (lmod a i (fun _ => evalE m0 a s 0 e)) sts
  | _ :: sts => initBlock m0 s a sts

def zeros : Nat → List Nat
  | 0 => []
  | n + 1 => 0 :: zeros n

/-- A session before it arrives: serial, the init block (read with the clock
at its arrival time; it reads nothing else that changes), its preset
attributes. -/
def initSess (p : Program) (m0 : Machine) (s : Nat) (spec : Session) : Sess :=
  let a0 := lmod (zeros p.nattrs) 0 (fun _ => s)
  let a1 := match p.init with
    | some b => initBlock { m0 with now := spec.arrive } s a0 (lget p.blocks b [])
    | none => a0
  { attrs := setMany a1 spec.attrs, frames := [{ blk := p.main, pc := 0, kind := Kind.seq }],
    holds := [], status := Status.absent, turnIx := 0, adm := 0, front := false }

def initSessions (p : Program) (m0 : Machine) (s : Nat) : List Session → List Sess
  | [] => []
  | x :: xs => initSess p m0 s x :: initSessions p m0 (s + 1) xs

def emptyPools : List Pool → List PoolSt
  | [] => []
  | _ :: ps => emptyPool :: emptyPools ps

/-- The machine before the first event: every session absent, the first
arrival scheduled; admission numbers count from 1. -/
def start (p : Program) : Machine :=
  let m0 : Machine := { now := 0, sess := [], pools := emptyPools p.pools, residents := [], busy := false,
                        stalled := false, events := [], ord := 0, admc := 1, ready := [], obs := [],
                        preempts := 0, served := 0, iters := [] }
  arrival p { m0 with sess := initSessions p m0 0 p.sessions } 0

/-- The machine after at most `fuel` events (and `fuel` for every inner loop). -/
def run (p : Program) (fuel : Nat) : Machine :=
  drive fuel fuel p (start p)

/-- The run has ended within the fuel: no event is left, no session is
ready, no free pool's head fits and the engine cannot start an iteration
(fuel that ends just after an event leaves one of these to do). -/
def complete (p : Program) (m : Machine) : Bool :=
  m.events.isEmpty && m.ready.isEmpty && (freeHead p m 0 m.pools).isNone && !(canStart p m)

/-! ## What a run observed -/

def obsOf (o : Nat) : List (Nat × Nat × Nat) → List (Nat × Nat)
  | [] => []
  | (o', s, v) :: xs => if Nat.beq o' o then (s, v) :: obsOf o xs else obsOf o xs

/-- The pairs of sessions s, s + 1, …, each session's in the order recorded. -/
def bySession (l : List (Nat × Nat)) (s : Nat) : Nat → List (Nat × Nat)
  | 0 => []
  | n + 1 => filterS s l ++ bySession l (s + 1) n

def obsLists (obs : List (Nat × Nat × Nat)) (ns o : Nat) : Nat → List (List (Nat × Nat))
  | 0 => []
  | n + 1 => bySession (obsOf o obs) 0 ns :: obsLists obs ns (o + 1) n

def observations (p : Program) (m : Machine) : List (List (Nat × Nat)) :=
  obsLists m.obs.reverse p.sessions.length 0 p.nobs

/-- Per observation (in the program's order), its (session, value) pairs by
session; and the number of preemptions. -/
def runW (p : Program) (fuel : Nat) : List (List (Nat × Nat)) × Nat :=
  let m := run p fuel
  (observations p m, m.preempts)

/-- vLLM's step count: the time of the last event, plus the call that
flushes the last finished request (tools/oracle/README.md). -/
def steps (p : Program) (fuel : Nat) : Nat :=
  if p.sessions.isEmpty then 0 else (run p fuel).now + 1

end Serq.Exec
