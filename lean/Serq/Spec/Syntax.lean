/-
  The Lean fragment of the serQ IR: the programs `Serq.Exec` runs.

  Hand-written.  `leangen/fragment.py` decides which IR programs are in the
  fragment and writes them with these constructors (`leangen/lterms.py`
  mirrors every structure here, field for field).

  Values and time are natural numbers: a subtraction stops at 0, `floorDiv`
  is `Nat` division (0 for a zero divisor), a comparison is 0 or 1, and a
  guard is true when it is not 0.  The step clock: one engine (stage 0)
  whose iteration lasts one unit; every other stage is a delay.
-/

namespace Serq

/-- The binary operators (`and`/`or` only in a claim). -/
inductive BinOp where
  | add | sub | mul | lt | le | gt | ge | eq | ne | and | or

/-- What a claim over iterations reads of the iteration (language §Claims). -/
inductive IterVar where
  | tokens | prefilled | decoders | residents | kvDecode | kvPrefill | demand | served | arrived

/-- The aggregates of a claim at end. -/
inductive Agg where
  | total | count | largest | smallest | prefixTotal

/-- Expressions over ℕ.  `running` and `waiting` are the engine's
`running.count` and `waiting.count` (its tokens cap and chunk);
`budgetLeft` is `budget_left(engine)` in the header of a hold the engine
admits; `iter`, `used`, `holders` and `agg` are read by claims. -/
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
  | cond (c a b : Expr)
  | lnot (a : Expr)
  | iter (v : IterVar)
  | used (pool : Nat)
  | holders (pool : Nat)
  | agg (a : Agg) (obs : Nat)

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

/-- A pool: capacity in units, block size (0: none), and whether the engine
admits its queue (otherwise it is the engine's memory, `preempt lifo`). -/
structure Pool where
  cap : Nat
  block : Nat
  viaEngine : Bool

/-- The step engine, stage 0: its tokens cap, its chunk (0: no cap), its
memory pool. -/
structure Engine where
  budget : Expr
  chunk : Expr
  memory : Option Nat

/-- An explicit session: preset attributes and, when `preset`, its turns. -/
structure Session where
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
