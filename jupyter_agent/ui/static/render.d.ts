// Types of render.js, for TypeScript users (the JupyterLab extension imports render.js).

/** A message the renderer sends when the user answers an ask or an approval. */
export interface AnswerMessage {
  type: 'answer';
  call_id: string;
  how: 'option' | 'other' | 'dismissed';
  /** 1-based index of the chosen option when `how` is "option", else null. */
  option_index: number | null;
  answer: string;
}

/** Options of a render: live mode when `onAction` is given, static otherwise. */
export interface RenderOptions {
  onAction?: (msg: AnswerMessage) => void;
}

/** A run's view state as reduced by jupyter_agent/ui/view.py (plain JSON). */
export type RunView = { [key: string]: any };

/** Draw `view` into `el`, replacing whatever `el` held. */
export function renderRun(el: HTMLElement, view: RunView, opts?: RenderOptions): void;

/** Draw `view` into `el` again, keeping unchanged nodes and the user's UI state. */
export function renderRunInto(el: HTMLElement, view: RunView, opts?: RenderOptions): void;
