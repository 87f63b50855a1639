import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';

import { ICommandPalette } from '@jupyterlab/apputils';

import { DocumentRegistry } from '@jupyterlab/docregistry';

import {
  INotebookModel,
  INotebookTracker,
  Notebook,
  NotebookActions,
  NotebookPanel
} from '@jupyterlab/notebook';

import { ToolbarButton } from '@jupyterlab/ui-components';

import { DisposableDelegate, IDisposable } from '@lumino/disposable';

import { CommandRegistry } from '@lumino/commands';

import { Menu } from '@lumino/widgets';

import { highlightAgentCells } from './agentCells';

/**
 * The agent cell magics, with the one-line description shown in menus.
 */
export const AGENT_MAGICS: ReadonlyArray<[string, string]> = [
  ['chat', 'one streamed model call'],
  ['toolloop', 'the model calls @tool functions until it answers'],
  ['plan', 'a planning agent with a live plan and ask buttons']
];

/**
 * The id of the command that inserts a `%%<magic>` cell.
 */
export function insertCommandId(magic: string): string {
  return `jupyter-agent:insert-${magic}-cell`;
}

/**
 * Put a `%%<magic>` cell below the active cell (or into it, when it is an empty code cell)
 * and leave the cursor on the line under the magic, ready for the prompt.
 */
export function insertAgentCell(notebook: Notebook, magic: string): void {
  const active = notebook.activeCell;
  const reuse =
    active !== null &&
    active.model.type === 'code' &&
    active.model.sharedModel.getSource().trim() === '';
  if (!reuse) {
    NotebookActions.insertBelow(notebook);
  }
  if (notebook.activeCell?.model.type !== 'code') {
    NotebookActions.changeCellType(notebook, 'code');
  }
  const cell = notebook.activeCell;
  if (!cell) {
    return;
  }
  cell.model.sharedModel.setSource(`%%${magic}\n`);
  notebook.mode = 'edit';
  void cell.ready.then(() => {
    cell.editor?.setCursorPosition({ line: 1, column: 0 });
    cell.editor?.focus();
  });
}

/**
 * Adds an "Agent" menu button to every notebook's toolbar.
 */
class AgentToolbarExtension
  implements DocumentRegistry.IWidgetExtension<NotebookPanel, INotebookModel>
{
  /**
   * Make the extension with the commands its menu lists.
   */
  constructor(commands: CommandRegistry) {
    this._commands = commands;
  }

  /**
   * Add the button to `panel`'s toolbar; the returned disposable removes it.
   */
  createNew(panel: NotebookPanel): IDisposable {
    const menu = new Menu({ commands: this._commands });
    menu.addClass('jp-JupyterAgent-menu');
    for (const [magic] of AGENT_MAGICS) {
      menu.addItem({ command: insertCommandId(magic) });
    }
    const button = new ToolbarButton({
      className: 'jp-JupyterAgent-toolbarButton',
      label: 'Agent ▾',
      tooltip: 'Insert a %%chat, %%toolloop or %%plan cell',
      onClick: () => {
        const rect = button.node.getBoundingClientRect();
        menu.open(rect.left, rect.bottom);
      }
    });
    if (!panel.toolbar.insertAfter('cellType', 'jupyterAgent', button)) {
      panel.toolbar.addItem('jupyterAgent', button);
    }
    return new DisposableDelegate(() => {
      button.dispose();
      menu.dispose();
    });
  }

  /**
   * The application's command registry.
   */
  private _commands: CommandRegistry;
}

/**
 * Notebook commands for agent cells: palette entries, a toolbar menu and markdown
 * highlighting of agent cell bodies.
 */
const plugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-agent:notebook-commands',
  description: 'Insert %%chat, %%toolloop and %%plan cells; highlight their bodies as markdown.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    palette: ICommandPalette | null
  ) => {
    const { commands } = app;
    for (const [magic, description] of AGENT_MAGICS) {
      const id = insertCommandId(magic);
      commands.addCommand(id, {
        label: args =>
          args.isPalette ? `Insert %%${magic} Cell` : `%%${magic} — ${description}`,
        caption: `Insert a %%${magic} cell below the active cell: ${description}`,
        isEnabled: () => tracker.currentWidget !== null,
        execute: () => {
          const panel = tracker.currentWidget;
          if (panel) {
            insertAgentCell(panel.content, magic);
          }
        }
      });
      palette?.addItem({ command: id, category: 'Jupyter Agent', args: { isPalette: true } });
    }
    app.docRegistry.addWidgetExtension('Notebook', new AgentToolbarExtension(commands));
    tracker.widgetAdded.connect((_, panel) => highlightAgentCells(panel));
    tracker.forEach(panel => highlightAgentCells(panel));
  }
};

export default plugin;
