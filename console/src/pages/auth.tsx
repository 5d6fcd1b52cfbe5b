import { api, ok } from "../api/client";
import { navigate } from "../router";
import { useSession } from "../session";
import { ActionForm, Field, text } from "../ui";

function next(): string {
  const want = new URLSearchParams(location.search).get("next");
  return want && want.startsWith("/") && !want.startsWith("//") && !want.startsWith("/signin") ? want : "/";
}

export function SignIn({ signedIn }: { signedIn: () => Promise<void> }) {
  return (
    <section class="narrow">
      <h1>Sign in to Berth</h1>
      <ActionForm
        label="Sign in"
        submit="Sign in"
        action={async (data) => {
          const me = await ok(
            api.POST("/api/v1/auth/login", { body: { email: text(data, "email"), password: String(data.get("password") ?? "") } }),
          );
          const to = me.must_change_password ? "/change-password" : next();
          await signedIn();
          navigate(to, true);
        }}
      >
        <Field label="Email" name="email" type="email" required autocomplete="username" />
        <Field label="Password" name="password" type="password" required autocomplete="current-password" />
      </ActionForm>
    </section>
  );
}

export function ChangePassword() {
  const { me, refresh } = useSession();
  return (
    <section class="narrow">
      <h1>{me.must_change_password ? "Choose your password" : "Change your password"}</h1>
      {me.must_change_password && <p>You signed in with a temporary password. Choose your own to go on.</p>}
      <ActionForm
        label="Change password"
        submit="Change password"
        action={async (data) => {
          const current = String(data.get("current") ?? "");
          const fresh = String(data.get("new") ?? "");
          if (fresh !== String(data.get("again") ?? "")) throw new Error("The two new passwords differ.");
          await ok(api.POST("/api/v1/me/password", { body: { current_password: current, new_password: fresh } }));
          await refresh();
          navigate("/", true);
        }}
      >
        <Field label="Current password" name="current" type="password" required autocomplete="current-password" />
        <Field label="New password (12 characters or more)" name="new" type="password" required minLength={12} autocomplete="new-password" />
        <Field label="New password, again" name="again" type="password" required minLength={12} autocomplete="new-password" />
      </ActionForm>
    </section>
  );
}
