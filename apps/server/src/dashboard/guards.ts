import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const template = (file: string): string => readFileSync(fileURLToPath(new URL(`../../templates/app/resources/users/${file}`, import.meta.url)), 'utf8');

/** The guards `svc create` writes into a UserCollection, for one made in the dashboard. */
export const USER_GUARDS: Readonly<Record<string, string>> = {
  'put.js': template('put.js'),
  'delete.js': template('delete.js'),
};
