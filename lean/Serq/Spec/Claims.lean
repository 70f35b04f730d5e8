/-
  What a claim of a program in the fragment says about `Serq.Exec`.

  Hand-written; transcribed in `leangen/exec_ref.py` with `Exec.lean`.

  A program with explicit sessions draws nothing, so its family of workloads
  is its own sessions and `Exec` has one path: a claim is a decidable
  proposition about that run (`check`, language §Claims):

  * `every iteration of S (e)`: the run completes within the fuel and `e` is
    not 0 at every iteration, read as it starts (after its batch is
    scheduled);
  * `some iteration of S (e)`: `e` is not 0 at some iteration;
  * `at end (e)`: the run completes, and when every session has ended `e`,
    read on the final machine, is not 0 (a run that ends with sessions live
    is not the end the claim is about);
  * `given (g)`: the claim says nothing unless every session satisfies `g`
    once its init block has run.

  A program whose sessions arrive by a law (`arrive batch(n)`, `renewal(g)`,
  `poisson(λ)`) has a family of workloads (language §Claims): any number of
  sessions up to a bound (500), each attribute its init block sets any
  natural number (the tool's explicit sessions replace the init's values
  whole), arriving at 0 under `batch`, at (i + 1) g under a constant
  renewal gap g, at any times in order under `poisson` (`inFamily`).  The
  generated statement (lean/Serq/Gen/Claims.lean) quantifies over it and
  over every prefix of each run (`holdsAt p c n`: the claim read on the
  machine after `n` events, the run's inner loops given `innerFuel p`):

  * `every iteration`, `at end`: for every workload of the family whose
    sessions satisfy the given, at every `n`;
  * `some iteration`: for some workload of the family whose sessions
    satisfy the given, at some `n`.
-/
import Serq.Spec.Exec

namespace Serq.Claims

open Serq Serq.Exec

/- A claim's expression at an iteration is `Exec.evalI`, as the cost's. -/

def valuesOf (o : Nat) : List (Nat × Nat × Nat) → List Nat
  | [] => []
  | (o', _, v) :: xs => if Nat.beq o' o then v :: valuesOf o xs else valuesOf o xs

def lmax : List Nat → Nat
  | [] => 0
  | x :: xs => Nat.max x (lmax xs)

def lmin : List Nat → Nat
  | [] => 0
  | x :: xs =>
    match xs with
    | [] => x
    | _ :: _ => Nat.min x (lmin xs)

def aggOf : Agg → List Nat → Nat
  | .total, vs => lsum vs
  | .count, vs => vs.length
  | .largest, vs => lmax vs
  | .smallest, vs => lmin vs
  | .prefixTotal, vs => prefixSums 0 (sortN vs)

/-- A claim's expression at the end of the run. -/
def evalEnd (m : Machine) : Expr → Nat
  | .num n => n
  | .now => m.now
  | .agg a o => aggOf a (valuesOf o m.obs)
  | .min x y => Nat.min (evalEnd m x) (evalEnd m y)
  | .max x y => Nat.max (evalEnd m x) (evalEnd m y)
  | .bin op x y => binOp op (evalEnd m x) (evalEnd m y)
  | .floorDiv x y => evalEnd m x / evalEnd m y
  | .ceilDiv x y => ceilDivN (evalEnd m x) (evalEnd m y)
  | .cond c x y => if nonzero (evalEnd m c) then evalEnd m x else evalEnd m y
  | .lnot x => boolN (Nat.beq (evalEnd m x) 0)
  | _ => 0

def allGiven (m0 : Machine) (g : Expr) : List Sess → Bool
  | [] => true
  | x :: xs => nonzero (evalE m0 x.attrs 0 0 g) && allGiven m0 g xs

def givenOk (p : Program) : Option Expr → Bool
  | none => true
  | some g => allGiven (start p) g (start p).sess

def allEnded : List Sess → Bool
  | [] => true
  | x :: xs => (match x.status with
                | .ended => true
                | _ => false) && allEnded xs

def everyIter (e : Expr) : List Iter → Bool
  | [] => true
  | r :: rs => nonzero (evalI r e) && everyIter e rs

def someIter (e : Expr) : List Iter → Bool
  | [] => false
  | r :: rs => nonzero (evalI r e) || someIter e rs

/-- The claim, decided on the program's run with `fuel`. -/
def check (p : Program) (fuel : Nat) (c : Claim) : Bool :=
  if givenOk p c.given then
    let m := run p fuel
    match c.kind with
    | .everyIter => complete p m && everyIter c.expr m.iters
    | .someIter => someIter c.expr m.iters
    | .atEnd => complete p m && (!(allEnded m.sess) || nonzero (evalEnd m c.expr))
  else true

/-! ## A family of workloads -/

/-- How the workload's sessions arrive. -/
inductive Law where
  | batch
  | renewal (gap : Nat)
  | poisson

/-- The arrival times the law gives sessions i, i + 1, …, `prev` the time of
the one before. -/
def arrivalsOk : Law → Nat → Nat → List Session → Bool
  | _, _, _, [] => true
  | .batch, i, prev, w :: ws => Nat.beq w.arrive 0 && arrivalsOk .batch (i + 1) prev ws
  | .renewal g, i, prev, w :: ws => Nat.beq w.arrive ((i + 1) * g) && arrivalsOk (.renewal g) (i + 1) prev ws
  | .poisson, i, prev, w :: ws => Nat.ble prev w.arrive && arrivalsOk .poisson (i + 1) w.arrive ws

def slotsOf : List (Nat × Nat) → List Nat
  | [] => []
  | x :: xs => x.1 :: slotsOf xs

def natsEq : List Nat → List Nat → Bool
  | [], [] => true
  | x :: xs, y :: ys => Nat.beq x y && natsEq xs ys
  | _, _ => false

/-- A session of the family: one turn, its preset attributes exactly the
slots the init block sets (their values any natural). -/
def shapeOk (slots : List Nat) (w : Session) : Bool :=
  !w.preset && w.turns.isEmpty && natsEq (slotsOf w.attrs) slots

def allShaped (slots : List Nat) : List Session → Bool
  | [] => true
  | w :: ws => shapeOk slots w && allShaped slots ws

/-- The workloads of a program whose sessions arrive by `law`: at most
`bound` sessions, of the shape `shapeOk`, arriving as the law says. -/
def inFamily (law : Law) (slots : List Nat) (bound : Nat) (ws : List Session) : Bool :=
  Nat.ble ws.length bound && allShaped slots ws && arrivalsOk law 0 0 ws

/-- The statements of a program's blocks. -/
def stmtCount : List (List Stmt) → Nat
  | [] => 0
  | b :: bs => b.length + stmtCount bs

/-- The fuel of a claim's inner loops (settling, a session's statements at
one instant, admissions and preemptions in one iteration): more than the
sessions times the statements can use. -/
def innerFuel (p : Program) : Nat :=
  (p.sessions.length + 2) * (2 * stmtCount p.blocks + 4)

/-- The machine after `n` events of p's run. -/
def runN (p : Program) (n : Nat) : Machine :=
  drive n (innerFuel p) p (start p)

/-- The claim read on the machine after `n` events: every iteration so far
satisfies it, some iteration so far does, or (at end) the sessions have not
all ended or it holds. -/
def holdsAt (p : Program) (c : Claim) (n : Nat) : Bool :=
  let m := runN p n
  match c.kind with
  | .everyIter => everyIter c.expr m.iters
  | .someIter => someIter c.expr m.iters
  | .atEnd => !(allEnded m.sess) || nonzero (evalEnd m c.expr)

end Serq.Claims
