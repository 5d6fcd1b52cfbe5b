import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { Identity } from "./api/client";

export type Session = { me: Identity; refresh: () => Promise<void> };
export const SessionContext = createContext<Session | null>(null);
export function useMe(): Identity {
  return useContext(SessionContext)!.me;
}
export function useSession(): Session {
  return useContext(SessionContext)!;
}
