"""Issue 28, second round: tables by class, HolmesGPT style (one table per program or format).

Written fresh for this round from the classes the second blind corpus named (not from its
cases, which the implementer did not read): every row is a spelling invented here, and each
table mixes secrets with the innocent texts of the same format. Commands are
(command, expected verdict, why); secrets (name, text, [secret substrings]); innocents
(name, text), which must come back byte for byte.
"""

from __future__ import annotations

S, R, F = "SAFE", "RISKY", "FORBIDDEN"
Row = tuple[str, str, str]
Secret = tuple[str, str, list[str]]
Innocent = tuple[str, str]

# ---- commands ---------------------------------------------------------------------------

ENVIRONMENT_DUMPS: list[Row] = [
    ("env", F, "prints every variable"),
    ("env -0", F, "NUL-separated, same content"),
    ("env -u HOME", F, "still prints the rest"),
    ("printenv", F, "prints every variable"),
    ("printenv AZURE_CLIENT_SECRET", F, "prints the secret itself"),
    ("printenv HOME", F, "printenv is the class, whatever name follows"),
    ("set", F, "a shell builtin that prints variables"),
    ("export -p", F, "prints exported variables"),
    ("export", F, "prints exported variables"),
    ("declare -x", F, "prints exported variables"),
    ("declare -p", F, "prints every variable"),
    ("typeset -x", F, "ksh/zsh spelling"),
    ("compgen -v", F, "lists variable names (and is a shell builtin)"),
    ("readonly -p", F, "prints read-only variables"),
    ("cat /proc/1/environ", F, "PID 1's environment"),
    ("strings /proc/self/environ", F, "own environment"),
    ("head -c 4096 /proc/2231/environ", F, "any process's environment"),
    ("ps -E", F, "BSD ps prints environments with -E"),
    ("ps eww 1", F, "BSD-style e option"),
    ("docker inspect web", F, "Config.Env holds the container's secrets"),
    ("docker container inspect api-1", F, "the container group's spelling"),
    ("podman inspect db", F, "podman is docker"),
    ("docker inspect --format '{{json .Config}}' web", F, "Config holds Env"),
    ("docker inspect -f '{{.Config.Env}}' web", F, "Env asked for by name"),
    ("docker inspect -f '{{.State.Status}}' web", R, "one field that is not the environment"),
    ("kubectl get secret db -o yaml", F, "base64 is not encryption"),
    ("kubectl get secrets -A -o json", F, "every secret in the cluster"),
    ("kubectl get secret tls -o jsonpath='{.data.tls\\.key}'", F, "one key of a secret"),
    ("kubectl get secret -n kube-system", R, "names only"),
    ("kubectl set env deployment/api --list", F, "prints the deployment's variables"),
    ("kubectl exec api-0 -- env", F, "runs a program in the pod"),
    ("systemctl show-environment", F, "the service manager's environment"),
    ("systemctl show nginx", F, "every property, Environment= included"),
    ("systemctl show nginx -p Environment", F, "Environment= asked for"),
    ("systemctl show nginx -p ActiveState,SubState", R, "states only"),
    ("env | grep -i token", F, "a pipeline does not make it smaller"),
    ("printenv | sort", F, "a pipeline does not make it smaller"),
]

HOST_NETWORK_READS: list[Row] = [
    ("iptables -L -n", S, "list rules, numeric"),
    ("iptables -S", S, "rules as commands"),
    ("iptables -L INPUT -n -v", S, "one chain with counters"),
    ("iptables -t nat -L -n", S, "the nat table"),
    ("iptables -nvL", S, "a cluster of listing flags"),
    ("iptables -S FORWARD", S, "one chain as commands"),
    ("ip6tables -L -n --line-numbers", S, "IPv6, numbered"),
    ("iptables-legacy -L -n -x", S, "the legacy binary"),
    ("iptables -t raw -S", S, "the raw table"),
    ("iptables -L -Z", R, "zeroes counters while listing"),
    ("iptables -t nat -L -n PREROUTING extra", R, "two chain names"),
    ("iptables -t bogus -L", R, "not a table"),
    ("iptables -A INPUT -p tcp --dport 6379 -j ACCEPT", R, "a remediation an engineer approves"),
    ("iptables -F", F, "flushes the firewall"),
    ("iptables -P INPUT DROP", F, "default drop"),
    ("resolvectl status", S, "resolver state"),
    ("resolvectl status eth0", S, "one link"),
    ("resolvectl query contoso.privatelink.blob.core.windows.net", S, "a lookup"),
    ("resolvectl query -t SRV _ldap._tcp.corp.example", S, "a typed lookup"),
    ("resolvectl dns", S, "servers per link"),
    ("resolvectl domain eth0", S, "search domains of a link"),
    ("resolvectl statistics", S, "cache counters"),
    ("resolvectl flush-caches", R, "changes the cache"),
    ("resolvectl dns eth0 10.0.0.53", R, "sets a server"),
    ("resolvectl revert eth0", R, "changes the link"),
    ("getent hosts db.internal.example", S, "the resolver's answer"),
    ("getent ahosts api.example.com", S, "all addresses"),
    ("getent ahostsv6 api.example.com", S, "IPv6 only"),
    ("getent hosts", S, "the hosts database"),
    ("getent passwd azureuser", R, "an account"),
    ("getent shadow", F, "password hashes"),
    ("getent ahosts 169.254.169.254", F, "the metadata address"),
]

AZ_DNS_WRITES: list[Row] = [
    ("az network private-dns record-set a add-record -g rg -z privatelink.vaultcore.azure.net "
     "-n kv -a 10.1.2.3", R, "fix a private endpoint's record"),
    ("az network private-dns record-set a remove-record -g rg -z privatelink.blob.core.windows.net "
     "-n sa -a 10.1.2.4", R, "remove a stale record"),
    ("az network private-dns record-set cname set-record -g rg -z corp.internal -n www "
     "-c web.corp.internal", R, "set a CNAME"),
    ("az network private-dns record-set aaaa add-record -g rg -z z.internal -n h -a fd00::4", R,
     "an IPv6 record"),
    ("az network private-dns link vnet create -g rg -z privatelink.redis.cache.windows.net -n l "
     "-v hub-vnet -e false", R, "link a zone to a VNet"),
    ("az network dns record-set txt add-record -g rg -z example.com -n _check -v x", R,
     "public zone record"),
    ("az network private-dns record-set a list -g rg -z z.internal", S, "a read"),
    ("az network private-dns zone list -g rg", S, "a read"),
    ("az role definition list --name Reader", S, "a role's actions, no secrets"),
    ("az role assignment list --assignee 11111111-2222-3333-4444-555555555555", S, "a read"),
    ("az vm extension list -g rg --vm-name vm1", S, "extension settings, not protected ones"),
    ("az lock list -g rg", S, "locks"),
    ("az webapp config show -g rg -n app --slot staging", S, "site config of a slot"),
    ("az network private-dns record-set a add-record -g rg -z z -n x -a 10.0.0.4 --debug", R,
     "still approvable; --debug is judged by the change"),
    ("az network vnet-gateway reset -g rg -n gw", R, "a network change"),
    ("az keyvault secret set --vault-name kv -n x --value y", F, "not a network change"),
]

#: Written after the first fixes, to see whether they hold on spellings not yet shown.
SECOND_PASS_COMMANDS: list[Row] = [
    ("systemctl show --property=Environment nginx", F, "Environment= by its long option"),
    ("podman container inspect x", F, "the container group's spelling"),
    ("nerdctl inspect x", F, "runs programs, and inspect prints the environment"),
    ("iptables --list --numeric", S, "long options"),
    ("iptables -t mangle -S OUTPUT", S, "mangle table"),
    ("iptables -L --line-numbers -n -v -x", S, "every print flag"),
    ("ip6tables -S", S, "IPv6 rules"),
    ("getent ahostsv4 storage.blob.core.windows.net", S, "IPv4 lookup"),
    ("resolvectl query --legend=no a.example", S, "a lookup without the legend"),
    ("az network private-dns record-set ptr add-record -g rg -z 1.10.in-addr.arpa -n 4 "
     "-d vm.internal", R, "a PTR record"),
    ("az network private-dns record-set srv add-record -g rg -z z -n _s._tcp -t x -r 1 -p 1 "
     "-w 1", R, "-p is the priority here, a number"),
    ("iptables -D INPUT 3", R, "delete one rule"),
    ("az network nic ip-config list -g rg --nic-name nic1", S, "--nic-name selects"),
    ("az network ddos-protection list -g rg", S, "a plan's settings, no secrets"),
    ("az network application-gateway waf-policy list -g rg", S, "WAF rules, no secrets"),
]

ALL_COMMAND_TABLES: dict[str, list[Row]] = {
    "environment dumps": ENVIRONMENT_DUMPS,
    "host network reads": HOST_NETWORK_READS,
    "az dns writes and reads": AZ_DNS_WRITES,
    "second pass": SECOND_PASS_COMMANDS,
}

# ---- redaction: secrets -----------------------------------------------------------------

DIRECTIVE_SECRETS: list[Secret] = [
    ("nginx basic auth header",
     'location / {\n    proxy_set_header Authorization "Basic b3BzOlMzY3JldFBhc3M=";\n}',
     ["b3BzOlMzY3JldFBhc3M="]),
    ("nginx api key header", '    proxy_set_header X-Api-Key "Zk3yV4lu3x9w8";', ["Zk3yV4lu3x9w8"]),
    ("haproxy userlist hash",
     "userlist ops\n    user admin password $5$rounds=5000$Qx1saltz$Hj8Kp0aZ", ["Hj8Kp0aZ",
                                                                             "Qx1saltz"]),
    ("haproxy insecure password", "userlist stats\n  user viewer insecure-password Wint3r!Sun",
     ["Wint3r!Sun"]),
    ("redis requirepass", "bind 0.0.0.0\nrequirepass Sup3r-R3dis!\nport 6379",
     ["Sup3r-R3dis!"]),
    ("redis masterauth", "replicaof 10.0.0.5 6379\nmasterauth  repl1caPw_77x",
     ["repl1caPw_77x"]),
    ("postgres primary_conninfo",
     "primary_conninfo = 'host=10.0.0.5 port=5432 user=replicator password=Repl1c8Me'",
     ["Repl1c8Me"]),
    ("strongswan psk", '10.0.0.1 10.0.0.2 : PSK "Tunn3l-Shared-K3y"', ["Tunn3l-Shared-K3y"]),
    ("openvpn-ish secret line", "secret   vpnShared0815", ["vpnShared0815"]),
    ("keepalived auth_pass", "authentication {\n    auth_type PASS\n    auth_pass Vrrp4ss\n}",
     ["Vrrp4ss"]),
    ("openldap rootpw", "rootpw {SSHA}k9Qx2vT0abcd", ["{SSHA}k9Qx2vT0abcd"]),
    ("slapd bind_pw", "bind_pw Ld4pBindPw", ["Ld4pBindPw"]),
    ("bitcoin-style rpcpassword", "rpcuser=ops\nrpcpassword hunter22Coin", ["hunter22Coin"]),
    ("cisco type 7", "username ops password 7 0822455D0A16", ["0822455D0A16"]),
    ("wireguard psk spaces", '  PreSharedKey = "w1reGuardPsk+AAA="', ["w1reGuardPsk+AAA="]),
    ("haproxy stats auth", "stats auth admin:St4tsPw", ["St4tsPw"]),
]

SQL_SECRETS: list[Secret] = [
    ("oracle identified by", "CREATE USER app IDENTIFIED BY \"Orac1ePw#1\";", ["Orac1ePw#1"]),
    ("mysql identified by", "CREATE USER 'web'@'%' IDENTIFIED BY 'MyS3cret';", ["MyS3cret"]),
    ("unquoted identified by", "create user reporting identified by Plain99pw;",
     ["Plain99pw"]),
    ("mysql identified with plugin",
     "ALTER USER app IDENTIFIED WITH caching_sha2_password BY 'NativePw1';", ["NativePw1"]),
    ("postgres alter role", "ALTER ROLE svc WITH LOGIN PASSWORD 'pgS3cretX';", ["pgS3cretX"]),
    ("postgres encrypted", "ALTER USER postgres WITH ENCRYPTED PASSWORD 'EncPw9';", ["EncPw9"]),
    ("create role valid until",
     "CREATE ROLE etl WITH PASSWORD 'etlPw2024' VALID UNTIL 'infinity';", ["etlPw2024"]),
    ("mysql set password function",
     "SET PASSWORD FOR 'root'@'localhost' = PASSWORD('r00tPw');", ["r00tPw"]),
    ("set password plain", "SET PASSWORD = 'selfPw_9';", ["selfPw_9"]),
    ("sql server login N literal", "ALTER LOGIN sa WITH PASSWORD = N'Sql$aPw1!';",
     ["Sql$aPw1!"]),
    ("create login", "CREATE LOGIN etl WITH PASSWORD = 'L0ginPw', CHECK_POLICY = OFF;",
     ["L0ginPw"]),
    ("grant identified by", "GRANT ALL ON db.* TO 'u'@'h' IDENTIFIED BY 'Gr4ntPw';",
     ["Gr4ntPw"]),
    ("t-sql procedure parameter", "sp_addlogin @loginame = N'x', @passwd = N'SpPw9!'",
     ["SpPw9!"]),
    ("scoped credential secret",
     "CREATE DATABASE SCOPED CREDENTIAL c WITH IDENTITY = 'u', SECRET = 'ScopedS3c';",
     ["ScopedS3c"]),
    ("lowercase alter user", "alter user bob password 'B0bPass';", ["B0bPass"]),
]

JSON_SECRETS: list[Secret] = [
    ("app setting pair", '{"name": "SQL_ADMIN_PW", "value": "Zz9pQx"}', ["Zz9pQx"]),
    ("key/value list", '[{"key": "stripeApiKey", "value": "abc123XYZ789secretvalue"}]',
     ["abc123XYZ789secretvalue"]),
    ("Name/Value capitalised", '{"Name":"REDIS_PASS","Value":"r3d1s-pw"}', ["r3d1s-pw"]),
    ("variable/val fragment", '  {"variable": "DB_PASSWD", "val": "Qq1-zz"}', ["Qq1-zz"]),
    ("arm parameter value", '{"parameters": {"sqlAdminPwd": {"value": "Kx7-pw"}}}',
     ["Kx7-pw"]),
    ("arm parameter odd name", '{"parameters": {"vmAdminSecret": {"value": "Hx_77-qq"}}}',
     ["Hx_77-qq"]),
    ("aci secureValue",
     '{"environmentVariables": [{"name": "TOKEN", "secureValue": "tkn-77a"}]}', ["tkn-77a"]),
    ("securestring defaultValue",
     '{"adminPass": {"type": "securestring", "defaultValue": "Df1tPw"}}', ["Df1tPw"]),
    ("securestring fragment",
     '"adminPasswordOrKey": {"type": "secureString", "defaultValue": "K3y-or-Pw"}',
     ["K3y-or-Pw"]),
    ("yaml secureValue", "environmentVariables:\n- name: REDIS_AUTH\n  secureValue: r3dis-Auth-9",
     ["r3dis-Auth-9"]),
]

ESCAPED_JSON_SECRETS: list[Secret] = [
    ("escaped once", '{"settings": "{\\"password\\":\\"Esc4pedPw\\"}"}', ["Esc4pedPw"]),
    ("escaped twice",
     '{"a": "{\\"b\\": \\"{\\\\\\"clientSecret\\\\\\": \\\\\\"Dbl3scaped\\\\\\"}\\"}"}',
     ["Dbl3scaped"]),
    ("u0022", '{\\u0022password\\u0022:\\u0022Un1codePw\\u0022}', ["Un1codePw"]),
    ("u0022 with space", 'body=\\u0022apiKey\\u0022: \\u0022uK3y9988aa\\u0022', ["uK3y9988aa"]),
    ("escaped in a log line", 'log: {\\"dbPassword\\":\\"InLogPw1\\"}', ["InLogPw1"]),
    ("html entities", '&quot;password&quot;:&quot;HtmlEsc1&quot;', ["HtmlEsc1"]),
    ("escaped connection string",
     '{"settings": "{\\"connectionString\\": \\"Server=db;Password=Cs9pw;\\"}"}', ["Cs9pw"]),
    ("u0022 client_secret", 'msg={\\u0022client_secret\\u0022:\\u0022abc~DEF.123\\u0022}',
     ["abc~DEF.123"]),
]

COMMAND_LINE_SECRETS: list[Secret] = [
    ("mysql -p attached", "mysql -h db -P 3306 -uadmin -p'My$ql7' -e 'select 1'", ["My$ql7"]),
    ("mysql --password=", "mysql --user=root --password=R00tPw2 db", ["R00tPw2"]),
    ("sudo -S fed by echo", "echo 'Sud0Pw' | sudo -S systemctl restart nginx", ["Sud0Pw"]),
    ("sudo --stdin fed by printf", "printf '%s\\n' 'Sud0Pw2' | sudo --stdin id", ["Sud0Pw2"]),
    ("curl -u", "curl -u admin:Cu7lPw https://x.example", ["Cu7lPw"]),
    ("htpasswd -bB", "htpasswd -bB users.db alice AlicePw9", ["AlicePw9"]),
    ("docker login -p", "docker login -u bot -p Dk3rPw registry.example.com", ["Dk3rPw"]),
    ("podman login -p", "podman login -u u -p Pd9Pw quay.io", ["Pd9Pw"]),
    ("sshpass -p", "sshpass -p 'Ss4Pw' ssh ops@10.0.0.4", ["Ss4Pw"]),
    ("net use pass before user", "net use \\\\10.0.0.9\\c$ Pa55Word1 /user:admin",
     ["Pa55Word1"]),
    ("sqlplus as sysdba", "sqlplus sys/Sys9pw@prod as sysdba", ["Sys9pw"]),
    ("az --admin-password", "az vm create -g rg -n vm --image Ubuntu2204 --admin-username ops "
     "--admin-password 'Vm@dminPw123'", ["Vm@dminPw123"]),
    ("az sql -p", "az sql server create -g rg -n s -u sqladm -p 'SqlSrvPw!9' -l eastus",
     ["SqlSrvPw!9"]),
    ("printf %s into --password-stdin",
     "printf %s 'HelmPw1' | helm registry login reg.io -u u --password-stdin", ["HelmPw1"]),
    ("psexec -p", "psexec \\\\host -u admin -p PsExecPw1 cmd", ["PsExecPw1"]),
    ("xfreerdp /p:", "xfreerdp /v:10.0.0.4 /u:admin /p:RdpPw123", ["RdpPw123"]),
    ("zip -P", "zip -P Z1pPw a.zip f", ["Z1pPw"]),
    ("7z -p attached", "7z a -pSevenZ1p x.7z f", ["SevenZ1p"]),
    ("nmcli password word", "nmcli dev wifi connect Home password Wif1Pw", ["Wif1Pw"]),
    ("ssh-keygen -P", "ssh-keygen -p -P 0ldPass! -N N3wPass! -f id", ["0ldPass!"]),
]

SECOND_PASS_SECRETS: list[Secret] = [
    ("dovecot passdb", "user1:{PLAIN}Dove9pw::::::", ["Dove9pw"]),
    ("ldif scheme", "userPassword: {SSHA}Wq3kZ0fa9Ab", ["Wq3kZ0fa9Ab"]),
    ("nut upsd", "  upsd_password = Ups9Pw!", ["Ups9Pw!"]),
    ("relay auth-pass", "auth-pass   Mq7-relay", ["Mq7-relay"]),
    ("ini password", "[mysqld]\npassword = IniPw_44", ["IniPw_44"]),
    ("properties", "db.password: Pr0ps-pw", ["Pr0ps-pw"]),
    ("sql quoted identifier", "CREATE USER \"svc\" PASSWORD 'QuotedId9';", ["QuotedId9"]),
    ("env list", '{"env": [{"name": "MONGO_INITDB_ROOT_PASSWORD", "value": "m0ngoR00t"}]}',
     ["m0ngoR00t"]),
    ("settingName", '[{"settingName": "SmtpPass", "value": "Smtp9pw"}]', ["Smtp9pw"]),
    ("app settings with slot flag", '{"appSettings": [{"name": "API_TOKEN", "value": '
     '"t0k-AbC-999", "slotSetting": false}]}', ["t0k-AbC-999"]),
    ("escaped apiToken", '{\\"apiToken\\": \\"aT0k-88\\"}', ["aT0k-88"]),
    ("url-encoded json", "data=%7B%22password%22%3A%22UrlEnc9%22%7D", ["UrlEnc9"]),
    ("smbclient -U user%pass", "smbclient -U ops%Smb9Pw //h/s", ["Smb9Pw"]),
    ("mongodb uri", "mongodump --uri mongodb://u:MgDump9@h/db", ["MgDump9"]),
    ("PGPASSWORD prefix", "PGPASSWORD=PgEnv9 psql -h db", ["PgEnv9"]),
    ("sqlcmd -P", "sqlcmd -S db -U sa -P 'Sq1Cmd!'", ["Sq1Cmd!"]),
    ("az --password", "az acr login -n reg --password Acr9Pw", ["Acr9Pw"]),
    ("echo into passwd --stdin", "echo Pipe9Pw | passwd --stdin ops", ["Pipe9Pw"]),
    ("keytool -storepass", "keytool -list -keystore k.jks -storepass Jks9Pw", ["Jks9Pw"]),
    ("rclone pass word", "rclone config create r webdav pass Rcl9Pw", ["Rcl9Pw"]),
]

ALL_SECRETS: dict[str, list[Secret]] = {
    "second pass": SECOND_PASS_SECRETS,
    "directive configs": DIRECTIVE_SECRETS, "SQL": SQL_SECRETS, "name/value JSON": JSON_SECRETS,
    "escaped JSON": ESCAPED_JSON_SECRETS, "command lines": COMMAND_LINE_SECRETS,
}

# ---- redaction: innocents ------------------------------------------------------------------

INNOCENTS: list[Innocent] = [
    ("sshd failed password", "Nov 28 10:00:01 vm sshd[812]: Failed password for invalid user "
     "admin from 203.0.113.9 port 52211 ssh2"),
    ("sshd accepted password", "sshd[9]: Accepted password for azureuser from 10.0.0.5 port "
     "50022 ssh2"),
    ("postgres auth failure", 'FATAL:  password authentication failed for user "app"'),
    ("prose", "Password expired"),
    ("sshd_config", "PasswordAuthentication no\nPermitEmptyPasswords no\nAuthorizedKeysFile "
     ".ssh/authorized_keys\nHostKey /etc/ssh/ssh_host_ed25519_key"),
    ("nginx directives", 'server_tokens off;\nauth_basic "Restricted";\nauth_basic_user_file '
     "/etc/nginx/.htpasswd;\nssl_session_cache shared:SSL:10m;\nssl_certificate_key "
     "/etc/ssl/private/site.key;"),
    ("openvpn files", "tls-auth ta.key 1\nsecret static.key\nauth SHA256\ncipher AES-256-GCM\n"
     "auth-user-pass /etc/openvpn/creds"),
    ("nsswitch", "passwd:         files systemd\nshadow:         files\ngroup:          files "
     "systemd\nhosts:          files dns myhostname"),
    ("strongswan enums", "conn azure\n    authby=secret\n    leftauth=psk\n    keyexchange=ikev2"),
    ("postgres algorithm", "password_encryption = scram-sha-256"),
    ("pg_hba", "host all all 10.0.0.0/8 scram-sha-256"),
    ("mysql plugin only", "CREATE USER app IDENTIFIED WITH auth_socket;"),
    ("oracle externally", "ALTER USER app IDENTIFIED EXTERNALLY;"),
    ("auth type setting", '{"name": "AUTH_TYPE", "value": "ManagedIdentity"}'),
    ("vault name", '{"name": "KEYVAULT_NAME", "value": "kv-prod-01"}'),
    ("key vault reference", '{"name": "DB_PASSWORD", "value": '
     '"@Microsoft.KeyVault(SecretUri=https://kv.vault.azure.net/secrets/db/)"}'),
    ("signing algorithm", '{"key": "signingAlgorithm", "value": "RS256"}'),
    ("secret storage type", '{"name": "AzureWebJobsSecretStorageType", "value": "files"}'),
    ("expiry date", '{"name": "ClientSecretExpiry", "value": "2026-01-01T00:00:00Z"}'),
    ("thumbprint", '{"secretThumbprint": "A1B2C3D4E5F60718293A4B5C6D7E8F9012345678"}'),
    ("tenant and client ids", '{"tenantId": "72f988bf-86f1-41af-91ab-2d7cd011db47", '
     '"clientId": "11111111-2222-3333-4444-555555555555"}'),
    ("kv parameter reference", '{"parameters": {"adminPassword": {"reference": {"keyVault": '
     '{"id": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/'
     'Microsoft.KeyVault/vaults/kv"}, "secretName": "vm-admin"}}}}'),
    ("azure mask", "AccountKey=[key hidden]"),
    ("stars", "password ********"),
    ("already redacted", "user ops password [REDACTED:secret_value]"),
    ("escaped enums", '{\\"passwordAuthentication\\":\\"disabled\\",\\"secretName\\":'
     '\\"db-pass\\"}'),
    ("dnssec key in yaml", "dnssec-keys: example.com. 257 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0"
     "dxCjjnopKl+GqJxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ=="),
    ("-p as path, port, pid", "mkdir -p /var/log/ghost && cp -p file1 file2\nssh -p 2222 "
     "azureuser@10.0.0.4\ndocker run -p 8080:80 nginx\nps -p 1234 -o pid,cmd\nping -p ff00 "
     "10.0.0.4\npidstat -p ALL 1\nhping3 -p 443 -S 10.0.0.4"),
    ("-p as protocol", "iptables -A INPUT -p tcp --dport 22 -j ACCEPT"),
    ("secret names in prose", "The key vault kv-prod holds the secret db-password"),
    ("token bucket", "Token bucket filter: rate 1mbit burst 32kbit"),
    ("settings that point", "AUTH_MODE=ManagedIdentity\nSECRET_STORE=keyvault\n"
     "TOKEN_AUDIENCE=api://ghost\nPASSWORD_MIN_LENGTH=12"),
    ("pam", "auth required pam_unix.so\nsession optional pam_keyinit.so revoke"),
    ("key names", "secretName=db-password keyName=key1 tokenType=Bearer"),
    ("header prose", "Set-Cookie header missing\nauthorization failed\nCookie policy: strict"),
    # second pass
    ("postfix yes", "smtp_sasl_auth_enable = yes"),
    ("random password", "ALTER USER 'x'@'%' IDENTIFIED BY RANDOM PASSWORD;"),
    ("dovecot mechanisms", "auth_mechanisms = plain login"),
    ("dovecot key file", "ssl_key = </etc/dovecot/private/dovecot.key"),
    ("hash algorithm", "password_hash_algo = bcrypt"),
    ("sshd more", "ClientAliveInterval 120\nUsePAM yes\nChallengeResponseAuthentication no\n"
     "PubkeyAcceptedKeyTypes +ssh-rsa"),
    ("lifetime", "tokenLifetime: 3600"),
    ("header name", "api_key_header: X-Api-Key"),
    ("policy prose", "The password must contain 12 characters"),
    ("token file", "--token-file /var/run/tok"),
    ("cookie flag", "session.cookie_secure = 1"),
    ("key id", "key_id = 0xDEADBEEF"),
    ("nm flags", "NetworkManager: connection 'Home' uses psk-flags 1"),
    ("auth state", "auth=ok"),
    ("scheme url", "lftp sftp://files.example.com"),
    ("weak name, enum value", "authKey: ManagedIdentity\nsigningKeyAlgorithm: ES256"),
    ("references and masks", "password: ${{ secrets.DB_PASSWORD }}\n"
     "\"primaryKey\": \"[key hidden]\"\n"
     "STORAGE_KEY=@Microsoft.KeyVault(VaultName=kv;SecretName=x)\ntoken: <redacted>"),
    ("named hashes", "tokenHash: sha256:"
     '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n'
     '"md5Hash": "1B2M2Y8AsgTpgAmY7PhCfg=="'),
]
