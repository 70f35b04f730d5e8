/-
  The Lean fragment of the serQ IR: the programs `Serq.Exec` runs.

  Hand-written.  `leangen/fragment.py` decides which IR programs are in the
  fragment and writes them with these constructors (`leangen/lterms.py`
  mirrors every structure here, field for field).

  Values and time are natural numbers: a subtraction stops at 0, `floorDiv`
  is `Nat` division (0 for a zero divisor), `ceilDiv` its ceiling, a
  comparison is 0 or 1, and a guard is true when it is not 0.  One engine
  (stage 0) whose iteration lasts its cost, an expression of the batch read
  as the iteration starts (the step clock is the cost 1); every other stage
  is a delay.
-/

namespace Serq

/-- The binary operators (`and`/`or` only in a claim). -/
inductive BinOp where
  | add | sub | mul | lt | le | gt | ge | eq | ne | and | or

/-- What a claim over iterations and an iteration's cost read of the
iteration (language §Claims, §Engines).  `attention2` is twice
`batch.attention` (Σ n (2 k₀ + n) over the batch's prefills: a natural),
read only by a cost. -/
inductive IterVar where
  | tokens | prefilled | decoders | residents | kvDecode | kvPrefill | demand | served | arrived
  | attention2

/-- The aggregates of a claim at end. -/
inductive Agg where
  | total | count | largest | smallest | prefixTotal

/-- Expressions over ℕ.  `running` and `waiting` are the engine's
`running.count` and `waiting.count` (its tokens cap and chunk);
`budgetLeft` is `budget_left(engine)` in the header of a hold the engine
admits; `iter`, `used`, `holders` and `agg` are read by claims (and `iter`
by the iteration's cost); `decoding`, `admission`, `remaining`,
`runDecoding` (`running.decoding`) and `runKv` (`running.kv_decode` when
true, `running.kv_prefill` when false) are read by an `only` predicate or a
serving key, for one resident at its turn. -/
inductive Expr where
  | num (n : Nat)
  | attr (slot : Nat)
  | now
  | cachedIn (pool : Nat)
  | budgetLeft
  | running
  | waiting (pool : Nat)
  | min (a b : Expr)
  | max (a b : Expr)
  | bin (op : BinOp) (a b : Expr)
  | floorDiv (a b : Expr)
  | ceilDiv (a b : Expr)
  | cond (c a b : Expr)
  | lnot (a : Expr)
  | iter (v : IterVar)
  | used (pool : Nat)
  | holders (pool : Nat)
  | agg (a : Agg) (obs : Nat)
  | decoding
  | admission
  | remaining
  | runDecoding
  | runKv (decode : Bool)

/-- The mode of a run: plain on a delay, prefill or decode on the engine. -/
inductive Mode where
  | plain | prefill | decode

/-- One pool of a hold: its units and its reserve (both read at admission). -/
structure HoldPool where
  pool : Nat
  units : Expr
  reserve : Option Expr

/-- The statements of the fragment; a body is a block index. -/
inductive Stmt where
  | turn
  | set (slot : Nat) (e : Expr)
  | observe (obs : Nat) (e : Expr)
  | hold (pools : List HoldPool) (body : Nat) (reuse : Option Expr) (cache : Option Expr)
  | run (stage : Nat) (mode : Mode) (work : Expr) (grow : Option Nat)
  | branch (guard : Expr) (thn : Nat) (els : Option Nat)
  | loop (body : Nat)
  | stop

/-- A pool: capacity in units, block size (0: none), whether the engine
admits its queue (otherwise it is the engine's memory, `preempt lifo`, or
`preempt none` when no run grows it), and its queue keys (`queue by`:
ascending, ties in join order; `[]`: first come first served). -/
structure Pool where
  cap : Nat
  block : Nat
  viaEngine : Bool
  keys : List Expr

/-- The step engine, stage 0: its tokens cap, its chunk (0: no cap), its
memory pool; the iteration's cost (its duration, an expression of the
batch, `Expr.iter`, read as the iteration starts); its schedule, `advance
running [only (serveOnly)] by (keys)` — ascending keys, ties in admission order,
`[]` admission order — then, when `admits`, `admit waiting [only
(admitOnly)] while (running.preempted == 0)`. -/
structure Engine where
  budget : Expr
  chunk : Expr
  memory : Option Nat
  cost : Expr
  keys : List Expr
  serveOnly : Option Expr
  admits : Bool
  admitOnly : Option Expr

/-- A session: its arrival time, its preset attributes and, when `preset`,
its turns.  The sessions arrive in order (an explicit session of the IR at
time 0). -/
structure Session where
  arrive : Nat
  attrs : List (Nat × Nat)
  turns : List (List (Nat × Nat))
  preset : Bool

/-- A program of the fragment. -/
structure Program where
  nattrs : Nat
  nobs : Nat
  pools : List Pool
  engine : Engine
  blocks : List (List Stmt)
  init : Option Nat
  main : Nat
  sessions : List Session

/-- The three forms of a claim (the engine is the only step stage). -/
inductive ClaimKind where
  | everyIter | someIter | atEnd

structure Claim where
  kind : ClaimKind
  expr : Expr
  given : Option Expr

end Serq
