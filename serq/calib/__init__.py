"""Calibration and measured runs: a consumer of the IR (docs/calibration.md).

``fit`` reads a program's engine costs and the constants they name from the
IR and fits them to a kernel profile; ``replay`` runs a measured run's
workload through a program's IR.  The readers of other tools' files live
beside them, one a format, each checked at the boundary: ``profile`` (a
kernel-profile bundle), ``runs`` (a measured run and its workload), over
``read`` (located CSV, JSON, JSON-lines and YAML errors).  ``compose`` makes
whole-step times from a profile, ``evaluate`` evaluates IR expressions over
arrays, ``solve`` holds the least squares, ``metrics`` the summary's
definitions, ``models`` the model and GPU table, ``command`` the two
commands' work, ``report`` what they print.  The linking is
serq.api.calibration's, the replay's figure serq.plot.measured's."""
