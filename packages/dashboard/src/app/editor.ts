import { autocompletion, closeBrackets, closeBracketsKeymap, completionKeymap } from '@codemirror/autocomplete';
import type { Completion, CompletionContext, CompletionResult } from '@codemirror/autocomplete';
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import { javascript } from '@codemirror/lang-javascript';
import { bracketMatching, defaultHighlightStyle, indentOnInput, syntaxHighlighting } from '@codemirror/language';
import { linter, lintGutter } from '@codemirror/lint';
import type { Diagnostic } from '@codemirror/lint';
import { highlightSelectionMatches, searchKeymap } from '@codemirror/search';
import { EditorState } from '@codemirror/state';
import { drawSelection, EditorView, highlightActiveLine, highlightActiveLineGutter, hoverTooltip, keymap, lineNumbers } from '@codemirror/view';
import { API_BY_NAME, SCRIPT_API } from './scriptApi.ts';

/** A syntax problem the server found (its compiler is the one that runs the script). */
export interface Problem {
  message: string;
  line?: number;
  column?: number;
}

export interface EditorOptions {
  parent: HTMLElement;
  doc: string;
  /** Resource names, for svc.<name> completions. */
  resources: readonly string[];
  /** Property names of the resource, for this.<name> completions. */
  properties: readonly string[];
  onChange(doc: string): void;
  /** Asks the server whether the text compiles. */
  check(doc: string): Promise<Problem | undefined>;
  /** Ctrl/Cmd+S. */
  save(): void;
}

function completions(options: EditorOptions) {
  const globals: Completion[] = SCRIPT_API.map((a) => ({
    label: a.name,
    type: a.kind === 'function' ? 'function' : a.kind === 'keyword' ? 'keyword' : 'variable',
    detail: a.signature ?? '',
    info: a.doc,
    ...(a.kind === 'function' ? { apply: `${a.name}(` } : {}),
  }));
  return (context: CompletionContext): CompletionResult | null => {
    const member = context.matchBefore(/(this|svc(?:\.[\w$]+)?|console)\.[\w$]*$/);
    if (member) {
      const dot = member.text.lastIndexOf('.');
      const owner = member.text.slice(0, dot);
      let list: Completion[] = [];
      if (owner === 'this') list = options.properties.map((p) => ({ label: p, type: 'property' }));
      else if (owner === 'svc') list = options.resources.map((r) => ({ label: r.replace(/\//g, '.').replace(/-/g, ''), type: 'namespace', info: `the /${r} resource` }));
      else if (owner.startsWith('svc.')) {
        list = ['get', 'post', 'put', 'del', 'exec', 'login', 'logout', 'me'].map((m) => ({ label: m, type: 'method', info: `${owner}.${m}(...) as an internal request; answers a promise` }));
      } else if (owner === 'console') list = ['log', 'info', 'warn', 'error'].map((m) => ({ label: m, type: 'method' }));
      return { from: member.from + dot + 1, options: list, validFor: /^[\w$]*$/ };
    }
    const word = context.matchBefore(/[\w$]+/);
    if (!word || (word.from === word.to && !context.explicit)) return null;
    return { from: word.from, options: globals, validFor: /^[\w$]*$/ };
  };
}

/** Docs of the Script API names under the mouse. */
const hoverDocs = hoverTooltip((view, pos) => {
  const line = view.state.doc.lineAt(pos);
  const text = line.text;
  let start = pos - line.from;
  let end = start;
  while (start > 0 && /[\w$]/.test(text[start - 1] ?? '')) start--;
  while (end < text.length && /[\w$]/.test(text[end] ?? '')) end++;
  if (start === end) return null;
  const name = text.slice(start, end);
  const api = API_BY_NAME.get(name);
  if (!api) return null;
  return {
    pos: line.from + start,
    end: line.from + end,
    above: true,
    create() {
      const dom = document.createElement('div');
      dom.className = 'cm-api-doc';
      const title = document.createElement('code');
      title.textContent = api.signature ?? api.name;
      const body = document.createElement('p');
      body.textContent = api.doc;
      dom.append(title, body);
      return { dom };
    },
  };
});

/** Syntax errors with their line, from the server's compiler, as the text changes. */
function serverLint(options: EditorOptions) {
  return linter(
    async (view): Promise<Diagnostic[]> => {
      const problem = await options.check(view.state.doc.toString()).catch(() => undefined);
      if (!problem) return [];
      const doc = view.state.doc;
      const lineNo = Math.min(Math.max(problem.line ?? 1, 1), doc.lines);
      const line = doc.line(lineNo);
      const from = Math.min(line.from + Math.max((problem.column ?? 1) - 1, 0), line.to);
      return [{ from, to: Math.max(from, line.to), severity: 'error', message: `line ${lineNo}: ${problem.message}` }];
    },
    { delay: 400 },
  );
}

/** A JavaScript editor that knows the Script API. */
export function createEditor(options: EditorOptions): EditorView {
  return new EditorView({
    parent: options.parent,
    state: EditorState.create({
      doc: options.doc,
      extensions: [
        lineNumbers(),
        highlightActiveLineGutter(),
        history(),
        drawSelection(),
        indentOnInput(),
        bracketMatching(),
        closeBrackets(),
        highlightActiveLine(),
        highlightSelectionMatches(),
        syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
        javascript(),
        autocompletion({ override: [completions(options)], icons: true }),
        hoverDocs,
        lintGutter(),
        serverLint(options),
        keymap.of([
          {
            key: 'Mod-s',
            preventDefault: true,
            run: () => {
              options.save();
              return true;
            },
          },
          ...closeBracketsKeymap, ...defaultKeymap, ...searchKeymap, ...historyKeymap, ...completionKeymap, indentWithTab]),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) options.onChange(update.state.doc.toString());
        }),
        EditorView.theme({ '&': { height: '100%' }, '.cm-scroller': { fontFamily: 'var(--mono)' } }),
      ],
    }),
  });
}
