import { cp, mkdir, readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';

// Reads docs/deploy/Dockerfile into stages and runs what it says without Docker: each stage is a
// folder, its WORKDIR mapped into that folder. Only the instructions the file uses are known; any
// other instruction fails the test, so the Dockerfile cannot grow a step the test skips.

export interface Instruction {
  op: string;
  /** The text after the instruction and its flags. */
  args: string;
  flags: Record<string, string>;
  /** The exec (JSON array) form, when the instruction has one. */
  exec?: string[];
}

export interface Stage {
  from: string;
  name?: string;
  steps: Instruction[];
}

const KNOWN = new Set(['FROM', 'WORKDIR', 'COPY', 'RUN', 'ENV', 'USER', 'EXPOSE', 'VOLUME', 'HEALTHCHECK', 'STOPSIGNAL', 'CMD']);

export function parseDockerfile(text: string): Stage[] {
  const lines: string[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    if (/^\s*#/.test(raw)) continue;
    if (raw.endsWith('\\')) {
      pending += `${raw.slice(0, -1)} `;
      continue;
    }
    const line = (pending + raw).trim();
    pending = '';
    if (line) lines.push(line);
  }
  const stages: Stage[] = [];
  for (const line of lines) {
    const [, opText, rest] = /^(\S+)\s*(.*)$/.exec(line) as RegExpExecArray;
    const op = opText.toUpperCase();
    if (!KNOWN.has(op)) throw new Error(`the Dockerfile uses ${op}, which the test does not know how to run`);
    let args = rest;
    const flags: Record<string, string> = {};
    for (let m = /^--([a-z-]+)=(\S+)\s+/.exec(args); m; m = /^--([a-z-]+)=(\S+)\s+/.exec(args)) {
      flags[m[1]] = m[2];
      args = args.slice(m[0].length);
    }
    if (op === 'FROM') {
      const [from, as, name] = args.split(/\s+/);
      stages.push({ from, name: as?.toUpperCase() === 'AS' ? name : undefined, steps: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) throw new Error(`${op} before FROM`);
    const step: Instruction = { op, args, flags };
    const execText = op === 'HEALTHCHECK' ? args.replace(/^CMD\s+/, '') : args;
    if (execText.startsWith('[')) step.exec = JSON.parse(execText) as string[];
    stage.steps.push(step);
  }
  return stages;
}

/** ENV lines (the key=value form) of a stage. */
export function stageEnv(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const step of stage.steps.filter((s) => s.op === 'ENV')) {
    for (const m of step.args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S+)/g)) env[m[1]] = m[2].replace(/^"|"$/g, '');
  }
  return env;
}

/** Copies `from` into `to` except the names .dockerignore lists (top-level names only: what this file uses). */
export async function copyContext(from: string, to: string, ignored: readonly string[]): Promise<void> {
  await mkdir(to, { recursive: true });
  for (const entry of await readdir(from)) {
    if (ignored.includes(entry)) continue;
    await cp(join(from, entry), join(to, entry), { recursive: true });
  }
}

export async function dockerignore(file: string): Promise<string[]> {
  return (await readFile(file, 'utf8'))
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => l.replace(/^\/|\/$/g, ''));
}
