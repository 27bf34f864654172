"""LibCST codemod commands shipped with pinfix (``python -m libcst.tool codemod``)."""
