import { useEffect, useRef } from 'preact/hooks';

/**
 * Runs `reset` when `key` changes after the first render, never on mount. A reset on mount would
 * run after the first paint and could throw away what the user typed in between (a fast typist,
 * a browser test or a slow machine get there first).
 */
export function useResetOn(key: string, reset: () => void): void {
  const seen = useRef(key);
  useEffect(() => {
    if (seen.current === key) return;
    seen.current = key;
    reset();
  }, [key]);
}
