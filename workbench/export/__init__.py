"""Template export: install a tuned variant as Goose's compaction prompt overrides.

`export_template` validates a variant's two templates in the sandbox, backs up the files it
replaces and writes them to ``<goose config dir>/prompts/``; `restore_backup` undoes it.
`export_from_run` picks a run's winner by a rule and exports it with its evidence as a Jinja
comment (`pick_from_run`, `evidence_comment`); `restore_last_export` undoes the last export.
"""

from workbench.export._evidence import (
    Evidence,
    evidence_comment,
    export_from_run,
    pick_from_run,
    stage_winner,
)
from workbench.export._export import BACKUP_MARK, ExportResult, export_template, restore_backup
from workbench.export._restore import LAST_EXPORT, record_export, restore_last_export

__all__ = ["BACKUP_MARK", "LAST_EXPORT", "Evidence", "ExportResult", "evidence_comment",
           "export_from_run", "export_template", "pick_from_run", "record_export",
           "restore_backup", "restore_last_export", "stage_winner"]
