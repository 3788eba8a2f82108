/** The Script API names an event script sees, with what the editor says about them. */
export interface ApiName {
  name: string;
  /** How it is called, for functions. */
  signature?: string;
  doc: string;
  kind: 'function' | 'variable' | 'keyword';
}

export const SCRIPT_API: readonly ApiName[] = [
  { name: 'this', kind: 'keyword', doc: 'The object the event is about. Change or add properties to change what is stored (On Post/Put/Validate) or answered (On Get).' },
  { name: 'me', kind: 'variable', doc: 'The signed-in user (without password), or undefined.' },
  { name: 'query', kind: 'variable', doc: 'The request\'s query. On BeforeRequest a script may change it.' },
  { name: 'previous', kind: 'variable', doc: 'On Put: the object as stored before this request.' },
  { name: 'internal', kind: 'variable', doc: 'true when another script sent the request (svc.<resource>.… from a script).' },
  { name: 'isRoot', kind: 'variable', doc: 'true when the request carries the root key (svc-ssh-key), as the dashboard does.' },
  { name: 'ctx', kind: 'variable', doc: 'The request: method, url, parts, query, body, headers, session.' },
  { name: 'event', kind: 'variable', doc: 'On BeforeRequest: the event the request will run (get, post, put, delete).' },
  { name: 'success', kind: 'variable', doc: 'On Login: whether the username and password matched.' },
  { name: 'schedule', kind: 'variable', doc: 'On Schedule: {time, pattern, timezone} of this run; time is its planned time (ISO 8601, UTC).' },
  { name: 'isMe', kind: 'function', signature: 'isMe(id)', doc: 'true when a user is signed in and me.id === id.' },
  { name: 'cancel', kind: 'function', signature: 'cancel(message, [status])', doc: 'Stops the script and refuses the request with message (status 400 unless given).' },
  { name: 'cancelIf', kind: 'function', signature: 'cancelIf(condition, message, [status])', doc: 'cancel() when condition is truthy.' },
  { name: 'cancelUnless', kind: 'function', signature: 'cancelUnless(condition, message, [status])', doc: 'cancel() when condition is falsy.' },
  { name: 'error', kind: 'function', signature: 'error(property, message)', doc: 'Reports a validation error for a property; the script goes on, the request is refused with all errors (400).' },
  { name: 'errorIf', kind: 'function', signature: 'errorIf(condition, property, message)', doc: 'error() when condition is truthy.' },
  { name: 'errorUnless', kind: 'function', signature: 'errorUnless(condition, property, message)', doc: 'error() when condition is falsy.' },
  { name: 'hasErrors', kind: 'function', signature: 'hasErrors()', doc: 'Whether error() reported anything in this run.' },
  { name: 'hide', kind: 'function', signature: 'hide(property)', doc: 'Leaves a property out of the answer (it is still stored and can be queried).' },
  { name: 'unhide', kind: 'function', signature: 'unhide(property)', doc: 'Undoes hide(property), also one of an earlier event of the request.' },
  { name: 'protect', kind: 'function', signature: 'protect(property)', doc: 'Keeps a property from being changed by this request: it keeps its stored value; this.property reads it and assigning it throws a TypeError.' },
  { name: 'unprotect', kind: 'function', signature: 'unprotect(property)', doc: 'Undoes protect(property), also one of an earlier event of the request.' },
  { name: 'changed', kind: 'function', signature: 'changed(property)', doc: 'On Put: whether this request changes the property (deep comparison with previous).' },
  { name: 'emit', kind: 'function', signature: 'emit([users, query], message, [data])', doc: 'Sends a realtime message to every client, or to the sockets of the users matching query.' },
  { name: 'setResult', kind: 'function', signature: 'setResult(value)', doc: 'Event resources: the value answered to the request.' },
  { name: 'svc', kind: 'variable', doc: 'The app\'s resources: svc.<resource>.get/post/put/del(...) run as internal requests with this request\'s session. Answer promises; callbacks work too.' },
  { name: 'console', kind: 'variable', doc: 'console.log/info/warn/error: lines go to the server log (the dashboard\'s log panel).' },
];

export const API_BY_NAME: ReadonlyMap<string, ApiName> = new Map(SCRIPT_API.map((a) => [a.name, a]));

/** What each event file is for. */
export const EVENT_DOCS: Record<string, { label: string; doc: string }> = {
  'get.js': { label: 'On Get', doc: 'Runs for each object answered. hide() or change properties; cancel() leaves the object out of a list.' },
  'validate.js': { label: 'On Validate', doc: 'Runs before On Post and On Put: error() refuses the request with the errors.' },
  'post.js': { label: 'On Post', doc: 'Runs before a new object is stored. Change this, or cancel().' },
  'put.js': { label: 'On Put', doc: 'Runs before an update is stored; previous holds the stored object.' },
  'delete.js': { label: 'On Delete', doc: 'Runs before an object is deleted; cancel() keeps it.' },
  'beforerequest.js': { label: 'On BeforeRequest', doc: 'Runs first for every request (event names it); may change query.' },
  'aftercommit.js': { label: 'On AfterCommit', doc: 'Runs after a write was stored: emit(), notify; errors are logged, the write stands.' },
  'login.js': { label: 'On Login', doc: 'Runs on every login attempt (success says how it went); cancel() refuses it.' },
  'beforereset.js': { label: 'On BeforeReset', doc: 'Runs before a password reset by mailed token is made, with the user as this; cancel() refuses it (the token stays usable).' },
  'schedule.js': { label: 'On Schedule', doc: 'Event resources with a "schedule" setting: runs at those times as root, with no request (me undefined, isRoot true); schedule.time is the planned time.' },
};
