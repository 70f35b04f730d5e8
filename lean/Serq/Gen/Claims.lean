/-
  GENERATED FILE: do not edit.
  Written by `python -m leangen claims`; `python -m leangen claims --check` (make check,
  make lean) fails when the file is not what that command writes now.
  Generator: leangen 0.1.0, reading IR version 1.
  The IR files read that have claims (SHA-256):
  Never compiled where it was generated: see lean/README.md.
-/
import Serq.Spec.Claims

/-!
  Each claim of a program inside the Lean fragment, as a proposition about
  `Serq.Exec` (`Serq.Claims.check`, lean/Serq/Spec/Claims.lean).  Its proof,
  when there is one, is the theorem of the same name in
  lean/Serq/Thm/ClaimProofs.lean; the others are listed in
  lean/Serq/Gen/Claims.unproved.txt, which `make lean` prints.
  Programs with claims that are outside the fragment (not stated):
-/

namespace Serq.Gen.Claims

open Serq

end Serq.Gen.Claims
