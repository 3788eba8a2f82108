import { rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '@svc/core';
import { scriptProperties, writeTypes } from '../src/typesCommand.js';
import { writeApp } from './helpers/app.js';

// Issue 23, item 9: a value an event script sets without a declared property is answered to
// clients, but `svc types` left it out of the object's type.
let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('svc types: properties set by event scripts', () => {
  it('an On Get\'s computed field is in the type, optional and unknown; declared ones keep their type', async () => {
    dir = await writeApp({
      'resources/todos/config.json': { type: 'Collection', properties: { title: { type: 'string' } } },
      'resources/todos/get.js': "this.summary = this.title + '!';\nthis['due soon'] = false;\nthis.title = this.title.trim();\nif (this.done == true) {}\n",
      'resources/users/config.json': { type: 'UserCollection', properties: {} },
      'resources/users/get.js': 'this.initials = this.username.slice(0, 2);\n',
    });
    const { text } = await writeTypes(dir, '-', silentLogger);
    expect(text).toContain("  title?: string;\n  /** Set by an event script; no property declares it. */\n  \"due soon\"?: unknown;\n  /** Set by an event script; no property declares it. */\n  summary?: unknown;\n}");
    expect(text).toContain('  username: string;\n  /** Set by an event script; no property declares it. */\n  initials?: unknown;\n}');
    expect(text).not.toContain('done');
  });

  it('reads assignments only: comparisons, arrow functions and computed names are not properties', () => {
    expect(scriptProperties(new Map([['get.js', 'if (this.a == 1 || this.b === 2) {} var f = this.c => 1; this[name] = 1; this.d = 1; this . e=2; this.$f = 3;']]))).toEqual(['d', 'e']);
  });
});
