import { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { JSONObject } from '@lumino/coreutils';

import { Widget } from '@lumino/widgets';

import { renderRunInto } from '../../jupyter_agent/ui/static/render.js';

/**
 * The MIME type of a jupyter-agent run (its events and view state).
 */
export const MIME_TYPE = 'application/vnd.jupyter-agent.run+json';

/**
 * The class name added to the renderer's node.
 */
const CLASS_NAME = 'jp-RenderedJupyterAgentRun';

/**
 * A widget that draws a saved jupyter-agent run from its MIME payload.
 */
export class RenderedRun extends Widget implements IRenderMime.IRenderer {
  /**
   * Construct a renderer for one output.
   */
  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this._mimeType = options.mimeType;
    this.addClass(CLASS_NAME);
  }

  /**
   * Draw the payload's `view` (the same view state the live widget draws), statically.
   */
  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const data = (model.data[this._mimeType] || {}) as JSONObject;
    const view = data.view as JSONObject | undefined;
    if (!view || typeof view !== 'object') {
      this.node.textContent =
        'This jupyter-agent output has no view state to draw (unknown format version ' +
        `${String(data.version ?? '?')}).`;
      return Promise.resolve();
    }
    // A saved notebook has no kernel to answer to: no onAction, so asks show as static.
    // renderRunInto keeps open sections when a display update re-renders this output.
    renderRunInto(this.node, view);
    return Promise.resolve();
  }

  /**
   * The MIME type this renderer reads from the bundle.
   */
  private _mimeType: string;
}

/**
 * The factory that makes run renderers; `safe` because it draws data, never script.
 */
export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MIME_TYPE],
  createRenderer: options => new RenderedRun(options)
};

/**
 * The MIME renderer extension for jupyter-agent runs.
 */
const extension: IRenderMime.IExtension = {
  id: 'jupyter-agent:run-renderer',
  description: 'Renders jupyter-agent runs saved in notebook outputs.',
  rendererFactory,
  rank: 0,
  dataType: 'json'
};

export default extension;
