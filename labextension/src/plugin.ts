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

import { insertOnProposal } from './insert';

import { liveCells } from './liveCells';

import { interruptOnStop } from './stop';

/**
 * The agent cell magics, with the one-line description shown in menus.
 */
export const AGENT_MAGICS: ReadonlyArray<[string, string]> = [
  ['chat', 'one streamed model call'],
  ['toolloop', 'the model calls @tool functions until it answers'],
  ['plan', 'a planning agent with a live plan and ask buttons']
];

/**
 * The placeholder prompt a new agent cell starts with, selected so that typing replaces it.
 * It says what to write; it has no `{…}`, so running it unchanged cannot fail on interpolation.
 */
export const PLACEHOLDERS: Readonly<Record<string, string>> = {
  chat: 'Write your question here, then run the cell.',
  toolloop: 'Describe the task here; the model calls your @tool functions until it can answer.',
  plan: 'Describe the goal here; the agent plans the steps, may ask you to choose, then works through them.'
};

/**
 * The label of the command that inserts a `%%<magic>` cell, in the palette and in menus:
 * "Agent: Insert %%plan cell", so typing "agent" in the palette finds them all.
 */
export function insertCommandLabel(magic: string): string {
  return `Agent: Insert %%${magic} cell`;
}

/**
 * The id of the command that inserts a `%%<magic>` cell.
 */
export function insertCommandId(magic: string): string {
  return `jupyter-agent:insert-${magic}-cell`;
}

/**
 * Put a `%%<magic>` cell below the active cell (or into it, when it is an empty code cell)
 * with a placeholder prompt under the magic, selected, so typing replaces it.
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
  const placeholder = PLACEHOLDERS[magic] ?? '';
  cell.model.sharedModel.setSource(`%%${magic}\n${placeholder}`);
  notebook.mode = 'edit';
  void cell.ready.then(() => {
    // A palette or menu that ran this command hands the focus back to the notebook as it
    // closes, after this promise settles: select and focus on the next frame, once it has.
    requestAnimationFrame(() => {
      cell.editor?.setSelection({
        start: { line: 1, column: 0 },
        end: { line: 1, column: placeholder.length }
      });
      cell.editor?.focus();
    });
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
  description:
    'Insert %%chat, %%toolloop and %%plan cells; highlight their bodies as markdown; ' +
    'interrupt the kernel when a running card is stopped; send the live notebook to the kernel.',
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
        label: insertCommandLabel(magic),
        caption: `Insert a %%${magic} cell below the active cell: ${description}`,
        isEnabled: () => tracker.currentWidget !== null,
        execute: () => {
          const panel = tracker.currentWidget;
          if (panel) {
            insertAgentCell(panel.content, magic);
          }
        }
      });
      palette?.addItem({ command: id, category: 'Jupyter Agent' });
    }
    app.docRegistry.addWidgetExtension('Notebook', new AgentToolbarExtension(commands));
    const attach = (panel: NotebookPanel): void => {
      highlightAgentCells(panel);
      interruptOnStop(panel);
      insertOnProposal(panel);
      liveCells(panel);
    };
    tracker.widgetAdded.connect((_, panel) => attach(panel));
    tracker.forEach(attach);
  }
};

export default plugin;
