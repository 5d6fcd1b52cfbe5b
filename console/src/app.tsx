// The shell: who is signed in, the navigation, and which page a path shows.
import { useEffect, useState } from "preact/hooks";
import { api, ok, settled, whenSignedOut, type Identity } from "./api/client";
import { Link, match, navigate, useLocation } from "./router";
import { SessionContext } from "./session";
import { ActionButton } from "./ui";
import { SignIn, ChangePassword } from "./pages/auth";
import { Overview, Members, Tokens, OrgAudit } from "./pages/organization";
import { ProjectPage, ProjectMembers, ProjectTokens, ProjectAudit } from "./pages/project";
import { EnvironmentPage } from "./pages/environment";
import { AppPage } from "./pages/app";
import { Templates } from "./pages/templates";

type Route = [string, (params: Record<string, string>) => preact.JSX.Element, string];

const routes: Route[] = [
  ["/", () => <Overview />, "Projects"],
  ["/members", () => <Members />, "Members"],
  ["/tokens", () => <Tokens />, "API tokens"],
  ["/audit", () => <OrgAudit />, "Audit log"],
  ["/templates", () => <Templates />, "Templates"],
  ["/projects/:project", (p) => <ProjectPage project={p.project} />, "Project"],
  ["/projects/:project/members", (p) => <ProjectMembers project={p.project} />, "Project members"],
  ["/projects/:project/tokens", (p) => <ProjectTokens project={p.project} />, "Deploy tokens"],
  ["/projects/:project/audit", (p) => <ProjectAudit project={p.project} />, "Project audit log"],
  ["/projects/:project/environments/:environment", (p) => <EnvironmentPage {...(p as { project: string; environment: string })} />, "Environment"],
  [
    "/projects/:project/environments/:environment/apps/:app",
    (p) => <AppPage {...(p as { project: string; environment: string; app: string })} />,
    "App",
  ],
];

export function App() {
  const path = useLocation();
  const [me, setMe] = useState<Identity | null | undefined>(undefined);
  // Signing out: the page is gone (its polls stopped), its last requests
  // are being answered, then the session ends.
  const [leaving, setLeaving] = useState(false);
  const refresh = async () => {
    try {
      setMe(await ok(api.GET("/api/v1/me")));
    } catch {
      setMe(null);
    }
  };
  useEffect(() => {
    whenSignedOut(() => setMe(null));
    refresh();
  }, []);

  useEffect(() => {
    if (me === null && path !== "/signin") {
      navigate(`/signin?next=${encodeURIComponent(location.pathname + location.search)}`, true);
    } else if (me && me.must_change_password && path !== "/change-password") {
      navigate("/change-password", true);
    }
  }, [me, path]);

  if (me === undefined) return <p class="muted">Loading…</p>;
  if (me === null || path === "/signin") {
    return (
      <Frame>
        <SignIn signedIn={refresh} />
      </Frame>
    );
  }
  if (me.must_change_password || path === "/change-password") {
    return (
      <SessionContext.Provider value={{ me, refresh }}>
        <Frame me={me}>
          <ChangePassword />
        </Frame>
      </SessionContext.Provider>
    );
  }
  let page: preact.JSX.Element = <NotFound />;
  let title = "Not found";
  for (const [pattern, show, name] of routes) {
    const params = match(pattern, path);
    if (params) {
      page = show(params);
      title = Object.values(params).at(-1) ?? name;
      if (pattern === "/") title = name;
      break;
    }
  }
  document.title = `${title} · Berth`;
  return (
    <SessionContext.Provider value={{ me, refresh }}>
      <Frame me={me} signOut={async () => {
        setLeaving(true);
        try {
          await settled();
          await ok(api.POST("/api/v1/auth/logout"));
          setMe(null);
        } finally {
          setLeaving(false);
        }
      }}>
        {leaving ? <p class="muted">Signing out…</p> : page}
      </Frame>
    </SessionContext.Provider>
  );
}

function Frame(props: { me?: Identity; signOut?: () => Promise<void>; children: preact.ComponentChildren }) {
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <Link href="/" class="brand">
          Berth
        </Link>
        {props.me && props.signOut && (
          <nav aria-label="Organization">
            <Link href="/">Projects</Link>
            <Link href="/members">Members</Link>
            <Link href="/tokens">API tokens</Link>
            <Link href="/audit">Audit log</Link>
            <Link href="/templates">Templates</Link>
          </nav>
        )}
        {props.me && (
          <div class="who">
            <span>{props.me.email}</span>
            {props.signOut && <ActionButton label="Sign out" action={props.signOut} class="secondary" />}
          </div>
        )}
      </header>
      <main id="main" tabIndex={-1}>
        {props.children}
      </main>
    </>
  );
}

function NotFound() {
  return (
    <>
      <h1>Page not found</h1>
      <p>
        No page has this address. <Link href="/">Back to the projects</Link>.
      </p>
    </>
  );
}
