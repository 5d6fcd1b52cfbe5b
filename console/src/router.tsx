// A router of the History API: every page its own path (shareable, back
// and forward work, a reload keeps the page).
import { useEffect, useState } from "preact/hooks";
import type { ComponentChildren } from "preact";

const listeners = new Set<() => void>();

export function navigate(to: string, replace = false) {
  if (to === location.pathname + location.search) return;
  if (replace) history.replaceState(null, "", to);
  else history.pushState(null, "", to);
  listeners.forEach((listener) => listener());
  window.scrollTo(0, 0);
  // The new page's content takes the focus, as a page load would start there.
  setTimeout(() => document.getElementById("main")?.focus({ preventScroll: true }), 0);
}

/** The current path; the caller renders again on every navigation (the query too). */
export function useLocation(): string {
  const [, setTick] = useState(0);
  useEffect(() => {
    const update = () => setTick((tick) => tick + 1);
    listeners.add(update);
    addEventListener("popstate", update);
    return () => {
      listeners.delete(update);
      removeEventListener("popstate", update);
    };
  }, []);
  return location.pathname;
}

/** Matches PATH against PATTERN (`/projects/:project`): its parameters, or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split("/").filter(Boolean);
  const got = path.split("/").filter(Boolean);
  if (want.length !== got.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    if (want[i].startsWith(":")) params[want[i].slice(1)] = decodeURIComponent(got[i]);
    else if (want[i] !== got[i]) return null;
  }
  return params;
}

/** A link that navigates without reloading (a plain link to the browser). */
export function Link(props: { href: string; children: ComponentChildren; class?: string }) {
  const { href, children, ...rest } = props;
  return (
    <a
      {...rest}
      href={href}
      aria-current={location.pathname === href ? "page" : undefined}
      onClick={(event) => {
        if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
        event.preventDefault();
        navigate(href);
      }}
    >
      {children}
    </a>
  );
}

export const seg = encodeURIComponent;
