/-
  Proofs of the claims stated in `Serq.Gen.Claims` (generated).

  Hand-written.  The proof of the claim proposition
  `Serq.Gen.Claims.NAME` is the theorem `Serq.Thm.ClaimProofs.NAME` of this
  file, for instance, for a claim that `python -m leangen claims` reports as
  holding (its doc comment says `exec_ref: holds`):

      theorem NAME : Serq.Gen.Claims.NAME := by
        decide +kernel

  (a claim is a decidable proposition about the program's one run, so
  evaluation in the kernel proves it when it holds).  `python -m leangen
  claims` reads the theorem names of this file: a claim without one is
  listed in lean/Serq/Gen/Claims.unproved.txt, which `make lean` prints.

  No program of the repository with claims is inside the Lean fragment yet,
  so there is nothing to prove here yet.
-/
import Serq.Gen.Claims

namespace Serq.Thm.ClaimProofs

end Serq.Thm.ClaimProofs
