// Secret redaction (collector/redact.h), the unit the injected collector and the launcher share:
// names that hold secrets, URL credentials and key-like strings become "<redacted>", and
// everything else passes through byte for byte.
#include "tracetune/collector/redact.h"

#include <cstring>
#include <string>

#include <gtest/gtest.h>

namespace tt::collector::redact {
namespace {

std::string value(const std::string& v, bool* replaced = nullptr) {
  std::string out;
  const bool any = put_value(v.data(), v.size(), [&](const char* s, std::size_t n) { out.append(s, n); });
  if (replaced) *replaced = any;
  return out;
}

std::string arg(const std::string& a, bool after_secret_flag = false) {
  std::string out;
  put_arg(a.data(), a.size(), after_secret_flag, [&](const char* s, std::size_t n) { out.append(s, n); });
  return out;
}

bool name(const char* n) { return secret_name(n, std::strlen(n)); }

TEST(Redact, SecretNamesButNotTheWorkingDirectory) {
  for (const char* n : {"HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "api_key", "DB_PASSWORD", "GITHUB_AUTH", "MY_CREDENTIALS",
                        "SESSION_ID", "SLACK_WEBHOOK_URL", "SENTRY_DSN", "cookie", "PRIVATE_KEY_PATH"})
    EXPECT_TRUE(name(n)) << n;
  for (const char* n : {"PWD", "OLDPWD", "PATH", "HOME", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "RANK"})
    EXPECT_FALSE(name(n)) << n;
}

TEST(Redact, UrlCredentialsKeepSchemeAndHost) {
  bool replaced = false;
  EXPECT_EQ(value("postgres://alice:hunter2@db.internal:5432/x", &replaced), "postgres://<redacted>@db.internal:5432/x");
  EXPECT_TRUE(replaced);
  EXPECT_EQ(value("see https://example.com/path?q=1 and ftp://u:p@h/"), "see https://example.com/path?q=1 and ftp://<redacted>@h/");
}

TEST(Redact, KeyLikeStringsButNotIdentifiersDigestsOrPaths) {
  EXPECT_EQ(value("Bearer aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"), "Bearer <redacted>");
  bool replaced = true;
  for (const char* plain : {"run_Name-2024-11-25_experiment_number_7", "3f786850e387550fdab836ed7e6dc881de23001b",
                            "/data/imagenet/train/n01440764/n01440764_10026.JPEG", "torch.nn.parallel.DistributedDataParallel",
                            "short"}) {
    EXPECT_EQ(value(plain, &replaced), plain);
    EXPECT_FALSE(replaced) << plain;
  }
}

TEST(Redact, ArgumentsAfterOrWithASecretFlag) {
  EXPECT_EQ(arg("--password=hunter2"), "--password=<redacted>");
  EXPECT_EQ(arg("--api-key=abc"), "--api-key=<redacted>");
  EXPECT_EQ(arg("hunter2", true), "<redacted>");
  EXPECT_TRUE(secret_flag("--token", 7));
  EXPECT_FALSE(secret_flag("--token=x", 9));  // carries its value: put_arg redacts it itself
  EXPECT_FALSE(secret_flag("--epochs", 8));
  EXPECT_EQ(arg("--epochs=10"), "--epochs=10");
  EXPECT_EQ(arg("train.py"), "train.py");
  EXPECT_EQ(arg(""), "");
}

TEST(Redact, HydraOverridesAndQueryParameters) {
  EXPECT_EQ(arg("db.password=hunter2"), "db.password=<redacted>");
  EXPECT_EQ(arg("+wandb.api_key=0123456789abcdef0123456789abcdef01234567"), "+wandb.api_key=<redacted>");
  EXPECT_EQ(arg("~trainer.auth_token=x"), "~trainer.auth_token=<redacted>");
  EXPECT_EQ(value("host=db user=bob password=s3cret port=5432"), "host=db user=bob password=<redacted> port=5432");
  EXPECT_EQ(value("https://hub.example/x?token=abc123&rev=main"), "https://hub.example/x?token=<redacted>&rev=main");
  EXPECT_EQ(value("api_key=a,secret=b;other=c"), "api_key=<redacted>,secret=<redacted>;other=c");
  bool replaced = true;
  for (const char* plain : {"trainer.max_epochs=10", "model=resnet50", "db.host=db.internal", "a=b=c", "password",
                            "password=", "x.password_file"}) {
    EXPECT_EQ(value(plain, &replaced), plain);
    EXPECT_FALSE(replaced) << plain;
  }
  // inside a name is not the start of one: only whole names count
  EXPECT_EQ(value("/data/run=1/db.password=x"), "/data/run=1/db.password=<redacted>");
}

TEST(Redact, JsonAndPythonDictsInArguments) {
  EXPECT_EQ(arg(R"({"lr": 0.1, "api_key": "sk-abc", "name": "run"})"), R"({"lr": 0.1, "api_key": "<redacted>", "name": "run"})");
  EXPECT_EQ(arg(R"({"auth":{"password":"p\"w"}})"), R"({"auth":{"password":"<redacted>"}})");
  EXPECT_EQ(arg("{'token': 'abc', 'steps': '5'}"), "{'token': '<redacted>', 'steps': '5'}");
  EXPECT_EQ(arg(R"({"password": ""})"), R"({"password": ""})");  // nothing to hide
  EXPECT_EQ(arg(R"("keys" and "values")"), R"("keys" and "values")");
  EXPECT_EQ(arg(R"({"token": "unterminated)"), R"({"token": "<redacted>)");
}

// The two-token forms: the argument after a long secret flag. A short flag's argument is kept
// (-p is a port or a profile more often than a password; redact.h says why).
TEST(Redact, TwoTokenForms) {
  const auto line = [](std::initializer_list<const char*> args) {
    std::string out;
    bool after = false;
    for (const char* a : args) {
      if (!out.empty()) out += ' ';
      put_arg(a, std::strlen(a), after, [&](const char* s, std::size_t n) { out.append(s, n); });
      after = secret_flag(a, std::strlen(a));
    }
    return out;
  };
  EXPECT_EQ(line({"train", "--password", "hunter2", "--token", "t0k", "--epochs", "3"}),
            "train --password <redacted> --token <redacted> --epochs 3");
  EXPECT_EQ(line({"ssh", "-p", "2222", "host"}), "ssh -p 2222 host");
}

}  // namespace
}  // namespace tt::collector::redact
