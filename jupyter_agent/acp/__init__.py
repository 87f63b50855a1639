"""The Agent Client Protocol (ACP): the project as an ACP agent, and any ACP agent in a cell
(``%%toolloop --acp "COMMAND"``, docs/acp-in-a-cell.md)."""
