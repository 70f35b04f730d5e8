/-
  What a claim of a program in the fragment says about `Serq.Exec`.

  Hand-written; transcribed in `leangen/exec_ref.py` with `Exec.lean`.

  A program in the fragment has explicit sessions and draws nothing, so its
  family of workloads is its own sessions and `Exec` has one path: a claim is
  a decidable proposition about that run (language §Claims):

  * `every iteration of S (e)`: the run completes within the fuel and `e` is
    not 0 at every iteration, read as it starts (after its batch is
    scheduled);
  * `some iteration of S (e)`: `e` is not 0 at some iteration;
  * `at end (e)`: the run completes, and when every session has ended `e`,
    read on the final machine, is not 0 (a run that ends with sessions live
    is not the end the claim is about);
  * `given (g)`: the claim says nothing unless every session satisfies `g`
    once its init block has run.
-/
import Serq.Spec.Exec

namespace Serq.Claims

open Serq Serq.Exec

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

/-- A claim's expression at an iteration. -/
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
  | .cond c x y => if nonzero (evalI r c) then evalI r x else evalI r y
  | .lnot x => boolN (Nat.beq (evalI r x) 0)
  | _ => 0

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
    | .everyIter => complete m && everyIter c.expr m.iters
    | .someIter => someIter c.expr m.iters
    | .atEnd => complete m && (!(allEnded m.sess) || nonzero (evalEnd m c.expr))
  else true

end Serq.Claims
