/-
  GENERATED FILE: do not edit.
  Written by `python -m leangen claims`; `python -m leangen claims --check` (make check,
  make lean) fails when the file is not what that command writes now.
  Generator: leangen 0.1.0, reading IR version 1.
  The IR files read that have claims (SHA-256):
    a2d63ae912153dfc9625506aab469e9c8274a0d21c246ae272cbc11612665542  tests/golden/ir/papers__bari_rad.ir.json
    cf4c9f43172d746135288367f9dc95daf0eb03bdc1197d42bdafe0ef2835de20  tests/golden/ir/papers__dai_fastertransformer.ir.json
    e14a0eec6cafd7d063099a3e538589a0ec8f72d962d54c6c7173c51b320ab2ff  tests/golden/ir/papers__dai_sarathi.ir.json
    68f9c06d7524e72c70d1df1d43a005fa6079d6b4d855520387d377776774811e  tests/golden/ir/papers__kong_svf.ir.json
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
    tests/golden/ir/papers__bari_rad.ir.json (2 claims): FAIL: outside the Lean fragment: an iteration cost other than the step clock (execute (1)) at examples/papers/bari_rad.sq:42:3
    tests/golden/ir/papers__dai_fastertransformer.ir.json (2 claims): FAIL: outside the Lean fragment: an iteration cost other than the step clock (execute (1)) at examples/papers/dai_fastertransformer.sq:26:3
    tests/golden/ir/papers__dai_sarathi.ir.json (2 claims): FAIL: outside the Lean fragment: an iteration cost other than the step clock (execute (1)) at examples/papers/dai_sarathi.sq:36:3
    tests/golden/ir/papers__kong_svf.ir.json (1 claim): FAIL: outside the Lean fragment: a queue key on pool `kv` (queue by) at examples/papers/kong_svf.sq:49:3
-/

namespace Serq.Gen.Claims

open Serq

end Serq.Gen.Claims
