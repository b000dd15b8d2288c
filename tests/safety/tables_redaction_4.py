"""Fourth red team (issue 28): redaction that generalises -- secrets nobody listed, innocents.

SECRETS rows are (family, text, substrings that must not survive); INNOCENT rows are (family,
text) that must come back byte-identical. The classes: names nobody listed (judged by key and
shape), values on the next line, base64 at any alignment, escaped JWTs, tcpdump payloads (real
output in data/tcpdump_payload_A.txt and _X.txt), command lines, presigned URLs; and the
innocents that merely contain a word, or are public, masked or references.
"""

from __future__ import annotations

# ruff: noqa: E501 -- literal outputs

PKCS8 = "MIICdgIBADANBgkqhkiG9w0BAQEFAASCAmAwggJcAgEAAoGBALxPyPGRqcj7+UGwhRsbNXZVQwhcaJlh3r2zqZHEqcJZF9adEmcZ7SmV2EScv3Fy87qBihqcnXneICRRrkjDzzgnm43YbL54Yvfa5u7/S/zYyQlsjkg5RamfNIBksqo2Vg2qM93g3hWiew2Qju4fbKMr6uxHPdf1WNTGqQv3s/PPAgMBAAECgYAoNPzZn1laIXrJ7M+uxvN2TaQfX+OxhDUT2g2FozD/3xf46dapDt8VdvoTREiYB4xEsS30mqYBBE1mk84bmTtgCsg4oGoFcX5C5Ip92H6K9LEpxo2KM8ESMJUKxWrEBCnxy7RJ8FgEdFG1+ybpLoeoF/vPsE1qywfQK6H3L2420QJBAPOjLqHU3ZYlt6evnHz+QmApm6jwYKKqfGQFCw2C9FNKrP7851BmIAqVYv8ghGMez4xcyEAIKUqxlPVYrg/hkscCQQDF3e2p6YfxaT4sRntOilS/WTkLJNoeLzORS4jVoXEUyfS3nfhBEddT1lRm3HNVEa4Wus3y4dXPNrIURUiRBg65AkB4qC/H5Wt3mGZDnSyamjC0/uYf3Ct/Y38G6Zh3sIrfVPQns4e6wVjM5P6J6silbfTLRofFbkVEwH1MpAZPxx6xAkBOVQqWnp4z4z861fhQ4pCkZBUiJUe4dWVL2wRj1pLm8QDRhFdYo1CEnzAwvItoHSS3WOLZibBUZUngnoEY8LX5AkEAhpZMFWnCi/ZjrvoaU43lXl3xNo4lCFFOVAPidlDyYN8FsKH4mDh8NUZSBh1EAGy1gwi/6QFLWb3+DOeTkyZ0zA=="
PKCS1 = "MIICXAIBAAKBgQC8T8jxkanI+/lBsIUbGzV2VUMIXGiZYd69s6mRxKnCWRfWnRJnGe0pldhEnL9xcvO6gYoanJ153iAkUa5Iw884J5uN2Gy+eGL32ubu/0v82MkJbI5IOUWpnzSAZLKqNlYNqjPd4N4VonsNkI7uH2yjK+rsRz3X9VjUxqkL97PzzwIDAQABAoGAKDT82Z9ZWiF6yezPrsbzdk2kH1/jsYQ1E9oNhaMw/98X+OnWqQ7fFXb6E0RImAeMRLEt9JqmAQRNZpPOG5k7YArIOKBqBXF+QuSKfdh+ivSxKcaNijPBEjCVCsVqxAQp8cu0SfBYBHRRtfsm6S6HqBf7z7BNassH0Cuh9y9uNtECQQDzoy6h1N2WJbenr5x8/kJgKZuo8GCiqnxkBQsNgvRTSqz+/OdQZiAKlWL/IIRjHs+MXMhACClKsZT1WK4P4ZLHAkEAxd3tqemH8Wk+LEZ7TopUv1k5CyTaHi8zkUuI1aFxFMn0t534QRHXU9ZUZtxzVRGuFrrN8uHVzzayFEVIkQYOuQJAeKgvx+Vrd5hmQ50smpowtP7mH9wrf2N/BumYd7CK31T0J7OHusFYzOT+ierIpW30y0aHxW5FRMB9TKQGT8cesQJATlUKlp6eM+M/OtX4UOKQpGQVIiVHuHVlS9sEY9aS5vEA0YRXWKNQhJ8wMLyLaB0kt1ji2YmwVGVJ4J6BGPC1+QJBAIaWTBVpwov2Y676GlON5V5d8TaOJQhRTlQD4nZQ8mDfBbCh+Jg4fDVGUgYdRABstYMIv+kBS1m9/gznk5MmdMw="
CUSTOM_DATA = "I2Nsb3VkLWNvbmZpZwpjaHBhc3N3ZDoKICBsaXN0OiB8CiAgICByb290OkNsb3VkSW5pdCFQYXNzOQogIGV4cGlyZTogRmFsc2UKcnVuY21kOgogIC0gZWNobyBkb25lCg=="
USER_DATA = "IyEvYmluL2Jhc2gKc2V0IC1lCmVjaG8gImFkbWluOlVzZXJENHRhIVBhc3MiIHwgY2hwYXNzd2QKc3lzdGVtY3RsIHJlc3RhcnQgc3NoZAo="
AZURE_JSON = "eyJjbG91ZCI6ICJBenVyZVB1YmxpY0Nsb3VkIiwgInRlbmFudElkIjogIjcyZjk4OGJmLTg2ZjEtNDFhZi05MWFiLTJkN2NkMDExZGI0NyIsICJhYWRDbGllbnRJZCI6ICIxMTExMTExMS0yMjIyLTMzMzMtNDQ0NC01NTU1NTU1NTU1NTUiLCAiYWFkQ2xpZW50U2VjcmV0IjogIkFrc35DbDFlbnQuU2VjcmV0LVZhbHVlXzQyIiwgInJlc291cmNlR3JvdXAiOiAicmcifQ=="
ENV_B64 = "TE9HX0xFVkVMPWluZm8KREJfSE9TVD1kYi5pbnRlcm5hbApEQl9QQVNTV09SRD1FbnYhSW5DZmdNYXA3Nwo="
JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJnaG9zdCJ9.c2lnbmF0dXJlLXZhbHVlLTEyMzQ1Njc4OTA"

SECRETS: list[tuple[str, str, list[str]]] = [
    # names nobody listed: judged by their words and the value's shape
    ("arm parameter value", '{"parameters": {"adminPasswordOrKey": {"value": "Vm!Adm1nP4ss#2024"}, "vmSize": {"value": "Standard_B2s"}}}', ["Vm!Adm1nP4ss#2024"]),
    ("arm securestring default", '{"parameters": {"adminPasswordOrKey": {"type": "securestring", "defaultValue": "D3fault!Secret#99"}, "location": {"type": "string", "defaultValue": "westeurope"}}}', ["D3fault!Secret#99"]),
    ("securestring any name", '{"parameters": {"sqlAdminLogin": {"type": "string"}, "dbConn": {"type": "secureString", "defaultValue": "Server=tcp:x;Uid=u;Pw=SecStr!Val3"}}}', ["SecStr!Val3"]),
    ("dbPass json", '{"dbHost": "db.internal", "dbPass": "Sql!P4ssw0rd2024"}', ["Sql!P4ssw0rd2024"]),
    ("dbPass yaml", "database:\n  dbHost: db.internal\n  dbPass: YamlDbP4ss!\n", ["YamlDbP4ss!"]),
    ("aci secureValue", '{"environmentVariables": [{"name": "DB_CONN", "secureValue": "Host=db;Pass=Aci!Secret77"}, {"name": "MODE", "value": "prod"}]}', ["Aci!Secret77"]),
    ("java entry key", '<properties>\n  <entry key="db.url">jdbc:postgresql://db:5432/app</entry>\n  <entry key="db.password">JavaProp!Pass55</entry>\n</properties>', ["JavaProp!Pass55"]),
    ("java properties", "db.url=jdbc:postgresql://db:5432/app\ndb.password=JavaProp!Pass66\n", ["JavaProp!Pass66"]),
    ("spring yaml", "spring:\n  datasource:\n    password: Spr1ng!DsPass\n", ["Spr1ng!DsPass"]),
    ("protectedSettings", '{"properties": {"publisher": "Microsoft.Azure.Extensions", "protectedSettings": {"commandToExecute": "sh setup.sh --token Ext3nsionT0ken99", "storageAccountName": "sa"}}}', ["Ext3nsionT0ken99"]),
    ("redisAuth camel", '{"redisAuth": "R3disAuthTok3nValue9"}', ["R3disAuthTok3nValue9"]),
    ("ini section", "[database]\nhost = db.internal\nsql_pwd = Ini!SqlPwd42\n", ["Ini!SqlPwd42"]),
    ("header jfrog", "X-JFrog-Art-Api: AKCp8jQ9NKpbTZ2wV1xyzAbCdEf0123456789ghIJkLmNoPqRsTuVw", ["AKCp8jQ9NKpbTZ2wV1xyz"]),
    ("curl jfrog", "curl -H 'X-JFrog-Art-Api: AKCp8jQ9NKpbTZ2wV1xyzAbCdEf0123456789ghIJkLmNoPqRsTuVw' https://art.example/api/x", ["AKCp8jQ9NKpbTZ2wV1xyz"]),
    # values on the next line
    ("yaml block |-", "auth:\n  password: |-\n    Bl0ck!Scal4r#Pass\n  user: ops\n", ["Bl0ck!Scal4r#Pass"]),
    ("yaml block >-", "oauth:\n  client_secret: >-\n    F0lded-Scalar-Secret-Value\n    continued-8x\n  client_id: app\n", ["F0lded-Scalar-Secret-Value", "continued-8x"]),
    ("yaml next line", "credentials:\n  token:\n    N3xtL1ne-T0ken-Value-42\n", ["N3xtL1ne-T0ken-Value-42"]),
    ("unattend.xml", "<UserAccounts>\n  <AdministratorPassword>\n    <Value>Unatt3nd!AdminPass</Value>\n    <PlainText>true</PlainText>\n  </AdministratorPassword>\n  <LocalAccounts>\n    <LocalAccount>\n      <Password>\n        <Value>L0cal!Acct#Pass</Value>\n        <PlainText>true</PlainText>\n      </Password>\n      <Name>ops</Name>\n    </LocalAccount>\n  </LocalAccounts>\n</UserAccounts>", ["Unatt3nd!AdminPass", "L0cal!Acct#Pass"]),
    ("xml value next line", "<connectionString>\n    Server=db;Database=app;User Id=u;Password=XmlNextL1ne!\n</connectionString>", ["XmlNextL1ne!"]),
    # base64 at any alignment: the secret sits at an offset that is not a multiple of 3
    ("customData", '{"osProfile": {"computerName": "vm1", "customData": "' + CUSTOM_DATA + '"}}', [CUSTOM_DATA[:40], CUSTOM_DATA[40:80]]),
    ("userData", '{"userData": "' + USER_DATA + '"}', [USER_DATA[:40], USER_DATA[40:]]),
    ("k8s secret azure.json", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: azure-cfg\ntype: Opaque\ndata:\n  azure.json: " + AZURE_JSON + "\n", [AZURE_JSON[:40], AZURE_JSON[100:160]]),
    ("configmap env in base64", "binaryData:\n  app.env: " + ENV_B64 + "\n", [ENV_B64[20:60]]),
    ("bare pkcs8", PKCS8, [PKCS8[:40], PKCS8[400:440]]),
    ("bare pkcs1 in json", '{"key": "' + PKCS1 + '"}', [PKCS1[:40], PKCS1[300:340]]),
    ("base64 run mid-stream", "blob=" + CUSTOM_DATA[1:], [CUSTOM_DATA[20:60]]),
    # escaped JWTs
    ("jwt after \\u0022", '{"state": "\\u0022' + JWT + '\\u0022"}', [JWT[:30], JWT[-20:]]),
    ("jwt after %3D", "https://app.example/cb?id_token%3D" + JWT + "%26state%3D1", [JWT[:30], JWT[-20:]]),
    ("bearer after %20", "Authorization=Bearer%20" + JWT, [JWT[:30]]),
    # command lines
    ("password-stdin", "echo 'Dock3r!Pass' | docker login -u ops --password-stdin myreg.azurecr.io", ["Dock3r!Pass"]),
    ("printf password-stdin", 'printf "%s" "Helm!Reg1stry" | helm registry login reg.example -u ops --password-stdin', ["Helm!Reg1stry"]),
    ("sudo -S", "echo 'Sud0!Pass' | sudo -S systemctl restart nginx", ["Sud0!Pass"]),
    ("htpasswd -b", "htpasswd -b /etc/nginx/.htpasswd admin Htp4ss!Word", ["Htp4ss!Word"]),
    ("htpasswd -bc", "htpasswd -bc /srv/.htpasswd ops Htp4ssTwo9", ["Htp4ssTwo9"]),
    ("mysqladmin password", "mysqladmin -u root password 'MysqlAdm!n9'", ["MysqlAdm!n9"]),
    ("net use /user", "net use \\\\fs01\\share /user:CORP\\ops Net!UsePass2", ["Net!UsePass2"]),
    ("net use share pass", "net use Z: \\\\fs01\\share Net!UsePass1 /user:CORP\\ops", ["Net!UsePass1"]),
    ("sqlplus", "sqlplus scott/T1ger!Pass@orcl", ["T1ger!Pass"]),
    ("sqlplus -s", "sqlplus -s system/Orcl!Pass2@//db:1521/XE @report.sql", ["Orcl!Pass2"]),
    ("az sql -p", "az sql server create -g rg -n s -u sqladmin -p 'AzSql!P4ss'", ["AzSql!P4ss"]),
    ("cmdkey /pass", "cmdkey /add:srv01 /user:ops /pass:Cmdk3y!Pass", ["Cmdk3y!Pass"]),
    ("rabbitmqctl", "rabbitmqctl change_password ops Rabb1t!Pass", ["Rabb1t!Pass"]),
    # presigned URLs and assertions
    ("s3 presigned", "https://bkt.s3.amazonaws.com/x.zip?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20240101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20240101T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=4f2c1a9b8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a3928170f6e5d4c", ["4f2c1a9b8e7d6c5b4a3928", "AKIAIOSFODNN7EXAMPLE"]),
    ("s3 session token", "https://bkt.s3.amazonaws.com/x?X-Amz-Security-Token=IQoJb3JpZ2luX2VjEJr%2F%2F%2F%2F%2F%2F%2F%2F%2FwEaCXVzLWVhc3QtMSJHMEUCIQDexample&X-Amz-Signature=abc", ["IQoJb3JpZ2luX2VjEJr"]),
    ("gcs signed", "https://storage.googleapis.com/bkt/x?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=sa%40proj.iam.gserviceaccount.com%2F20240101%2Fauto%2Fstorage%2Fgoog4_request&X-Goog-Date=20240101T000000Z&X-Goog-Expires=900&X-Goog-SignedHeaders=host&X-Goog-Signature=8d2e6f1c0b9a87654321fedcba0987654321fedcba0987654321fedcba098765", ["8d2e6f1c0b9a87654321fedcba"]),
    ("s3 v2 signature", "https://bkt.s3.amazonaws.com/x?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires=1700000000&Signature=vjbyPxybdZaNmGa%2ByT272YEAiv4%3D", ["vjbyPxybdZaNmGa"]),
    ("SAMLResponse form", "RelayState=%2Fhome&SAMLResponse=PHNhbWxwOlJlc3BvbnNlIHhtbG5zOnNhbWxwPSJ1cm46b2FzaXM6bmFtZXM6dGM6U0FNTDoyLjA6cHJvdG9jb2wiIElEPSJfMSI%2BPC9zYW1scDpSZXNwb25zZT4%3D", ["PHNhbWxwOlJlc3BvbnNl"]),
    ("SAMLResponse input", '<input type="hidden" name="SAMLResponse" value="PHNhbWxwOlJlc3BvbnNlIElEPSJfYWJjIj48L3NhbWxwOlJlc3BvbnNlPg=="/>', ["PHNhbWxwOlJlc3BvbnNl"]),
    # second pass, written after the first fixes by the same classes
    ("php define", "define('DB_PASSWORD', 'WpDbP4ss!');", ["WpDbP4ss!"]),
    ("python environ", 'os.environ["API_TOKEN"] = "T0kenValue99"', ["T0kenValue99"]),
    ("ruby hash", "config = {'client_secret' => 'RubyCl1entSecret'}", ["RubyCl1entSecret"]),
    ("openssl passwd", "useradd -p $(openssl passwd -6 Us3rAdd!Pw) ops", ["Us3rAdd!Pw"]),
    ("printf into passwd", 'printf "NewP4ss!\\nNewP4ss!\\n" | passwd ops', ["NewP4ss!"]),
    ("gzip customData", '{"customData": "H4sIAAAAAAACA1NOzskvTdFNzs9Ly0znKkgsLi7PL0qxUnCvMiwoSE1RDACKcBUXZ8QXlCeWlmRYKZQUlaZyAQAxgVSLNgAAAA=="}', ["H4sIAAAAAAACA1NOzskvTdFNzs9Ly0", "znKkgsLi7PL0qxUnCvMiwoSE1RDACK"]),
    ("jwt bearer assertion", "grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=abcdef0123456789ABCDEFxyz", ["abcdef0123456789ABCDEF"]),
    ("terraform output", '{"db_password": {"sensitive": true, "type": "string", "value": "Tf0utput!Pw"}}', ["Tf0utput!Pw"]),
    ("maven settings", "<servers>\n  <server>\n    <id>repo</id>\n    <username>ci</username>\n    <password>MavenP4ss!</password>\n  </server>\n</servers>", ["MavenP4ss!"]),
]

INNOCENT: list[tuple[str, str]] = [
    ("app settings that merely contain a word", '[{"name": "KEYVAULT_NAME", "value": "kv-prod-01", "slotSetting": false}, {"name": "AUTH_TYPE", "value": "ManagedIdentity", "slotSetting": false}, {"name": "SIGNING_ALGORITHM", "value": "RS256", "slotSetting": false}, {"name": "AzureWebJobsSecretStorageType", "value": "files", "slotSetting": false}, {"name": "Redis__KeyPrefix", "value": "orders:", "slotSetting": false}, {"name": "DB_PASSWORD", "value": "@Microsoft.KeyVault(SecretUri=https://kv-prod-01.vault.azure.net/secrets/db-password/)", "slotSetting": false}, {"name": "WEBSITE_LOAD_CERTIFICATES", "value": "A909502DD82AE41433E6F83886B00D4277A32A7B", "slotSetting": false}, {"name": "AZURE_TENANT_ID", "value": "72f988bf-86f1-41af-91ab-2d7cd011db47", "slotSetting": false}]'),
    ("the same as env", "KEYVAULT_NAME=kv-prod-01\nAUTH_TYPE=ManagedIdentity\nSIGNING_ALGORITHM=RS256\nAzureWebJobsSecretStorageType=files\nRedis__KeyPrefix=orders:\nDB_PASSWORD=@Microsoft.KeyVault(VaultName=kv-prod-01;SecretName=db-password)\nAZURE_TENANT_ID=72f988bf-86f1-41af-91ab-2d7cd011db47\nAZURE_CLIENT_ID=11111111-2222-3333-4444-555555555555\n"),
    ("the same as yaml", "env:\n  KEYVAULT_NAME: kv-prod-01\n  AUTH_TYPE: ManagedIdentity\n  SIGNING_ALGORITHM: RS256\n  secretStoreType: keyvault\n  tokenLifetime: 3600\n  passwordAuthentication: Disabled\n  disablePasswordAuthentication: true\n  keySource: Microsoft.Storage\n"),
    ("azure masked key", "DefaultEndpointsProtocol=https;AccountName=sa;AccountKey=[key hidden];EndpointSuffix=core.windows.net"),
    ("sysprep mask", "<Password>\n  <Value>*SENSITIVE*DATA*DELETED*</Value>\n  <PlainText>true</PlainText>\n</Password>"),
    ("thumbprint", "Thumbprint                                Subject\n----------                                -------\nA909502DD82AE41433E6F83886B00D4277A32A7B  CN=ghost"),
    ("thumbprint json", '{"certificateThumbprint": "A909502DD82AE41433E6F83886B00D4277A32A7B", "thumbprint": "A909502DD82AE41433E6F83886B00D4277A32A7B"}'),
    ("tenant ids", '{"tenantId": "72f988bf-86f1-41af-91ab-2d7cd011db47", "clientId": "11111111-2222-3333-4444-555555555555", "principalId": "22222222-3333-4444-5555-666666666666", "objectId": "33333333-4444-5555-6666-777777777777"}'),
    ("nuget lock", '{"version": 1, "dependencies": {"net8.0": {"Newtonsoft.Json": {"type": "Direct", "requested": "[13.0.3, )", "resolved": "13.0.3", "contentHash": "HrC5BXdl00IP9zeV+0Z848QWPAoCr9P3bDEZguI+gkLcBKAOxix/tLEAAHC+UvDNPv4a2d18lOReHMOagPa+zQ=="}}}}'),
    ("nupkg metadata", '{\n  "version": 2,\n  "contentHash": "HrC5BXdl00IP9zeV+0Z848QWPAoCr9P3bDEZguI+gkLcBKAOxix/tLEAAHC+UvDNPv4a2d18lOReHMOagPa+zQ==",\n  "source": "https://api.nuget.org/v3/index.json"\n}'),
    ("sha512 base64 named", "sha512: HrC5BXdl00IP9zeV+0Z848QWPAoCr9P3bDEZguI+gkLcBKAOxix/tLEAAHC+UvDNPv4a2d18lOReHMOagPa+zQ=="),
    ("dig +short DNSKEY ecdsa", "257 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ==\n256 3 13 oJMRESz5E4gYzS/q6XDrvU1qMPYIjCWzJaOau8XNEZeqCYKD5ar0IRd8KqXXFJkqmVfRvMGPmM1x8fGAa2XhSA=="),
    ("dig +short DNSKEY ed25519", "257 3 15 l02Woi0iS8Aa25FQkUd9RMzZHJpBoRQwAQEX1SxZJA4="),
    ("dig +short RRSIG", "A 13 2 300 20240601000000 20240501000000 34505 example.com. 1c4ZPIZQRnVYVgLD3dYw0JDwF/kt0b9Fz5LE3ZDbr6T2Z41F5MXTtLhtVL8NVqZRmq1Vg7xVcm/Bh8GZjkpnzQ=="),
    ("dig +short DS", "2371 13 2 32996839A6D808AFE3EB4A795A0E6A7A39A76FC52FF228B22B76F6D63826F2B9"),
    ("public keys", '{"publicKey": "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC0 ops@x", "sshPublicKeys": [{"keyData": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHkg ops@x"}]}'),
    ("jwks", '{"keys": [{"kty": "RSA", "use": "sig", "kid": "nOo3ZDrODXEK1jKWhXslHR_KXEg", "x5t": "nOo3ZDrODXEK1jKWhXslHR_KXEg", "n": "oaLLT9hkcSj2tGfZsjbu7Xz1Krs0qEicXPmEsJKOBQHauZ_kRM1HdEkgOJbUznUspE6xOuOSXjlzErqBxXAu4SCvcvVOCYG2v9G3-uIrLF5dstD0sYHBo1VomtKxzF90Vslrkn6rNQgUGIWgvuQTxm1uRklYFPEcTIRw0LnYknzJ06GC9ljKR617wABVrZNkBuDgQKj37qcyxoaxIGdxEcmVFZXJyrxDgdXh9owRmZn6LIJlGjZ9m59emfuwnBnsIQG7DirJwe9SXrLXnexRQWqyzCdkYaOqkpKrsjuxUj2-MHX31FqsdpJJsOAvYXGOYBKJRjhGrGdONVrZdUdTBQ", "e": "AQAB"}]}'),
    ("key vault references", "DB_PASSWORD: \"@Microsoft.KeyVault(VaultName=kv-prod;SecretName=db-password)\"\nAPI_KEY: \"@Microsoft.KeyVault(SecretUri=https://kv-prod.vault.azure.net/secrets/api-key/0123456789abcdef0123456789abcdef)\"\n"),
    ("configmap not secret", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  LOG_LEVEL: debug\n  API_BASE: https://api.internal\n"),
    ("properties pointers", "db.url=jdbc:postgresql://db:5432/app\ndb.username=app\ndb.password.file=/run/secrets/db\nsecret.key.path=/etc/app/key\n"),
    ("env pointers and flags", "SECRET_KEY_FILE=/run/secrets/key\nTOKEN_TTL=3600\nAUTH_ENABLED=true\nPASSWORD_MIN_LENGTH=12\nAPI_KEY_HEADER=X-Api-Key\n"),
    ("ad app credentials metadata", '{"passwordCredentials": [{"customKeyIdentifier": null, "displayName": "rotation-2024", "endDateTime": "2026-01-01T00:00:00Z", "hint": "Xy7", "keyId": "44444444-5555-6666-7777-888888888888", "secretText": null, "startDateTime": "2025-01-01T00:00:00Z"}]}'),
    ("request ids", "x-ms-request-id: 6c7a3f5e-1b2d-4c3e-9f8a-7b6c5d4e3f2a\nx-ms-correlation-request-id: 6c7a3f5e-1b2d-4c3e-9f8a-7b6c5d4e3f2a\nETag: \"0x8DC12AB34CD56EF\"\n"),
    ("tcpdump plain http", "12:00:00.000001 IP 10.0.0.4.50412 > 10.1.0.4.80: Flags [P.], seq 1:40, ack 1, win 502, length 39: HTTP: GET /health HTTP/1.1\nE..[..@.@.......\nGET /health HTTP/1.1\nHost: web\n\n"),
    ("az tenant flag", "az login --identity --tenant 72f988bf-86f1-41af-91ab-2d7cd011db47"),
    ("cert pem", "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\n-----END CERTIFICATE-----"),
    ("signing settings", '{"signingKeyType": "RSA", "tokenSigningAlgorithm": "RS256", "accessTokenAcceptedVersion": 2, "credentialType": "ServicePrincipal", "authenticationType": "Basic"}'),
    # second pass
    ("arm expressions", '{"adminPassword": "[parameters(\'adminPassword\')]", "storageKey": "[listKeys(variables(\'sa\'), \'2023-01-01\').keys[0].value]"}'),
    ("yaml nulls", "auth:\n  password: ~\n  token: null\n  apiKey: \"\"\n"),
    ("ssh public key data", '{"publicKeys": [{"keyData": "AAAAB3NzaC1yc2EAAAADAQABAAABAQC0abcdef0123456789", "path": "/home/ops/.ssh/authorized_keys"}], "sshKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHkg ops@x"}'),
    ("pagination tokens", "https://management.azure.com/x?api-version=2023-01-01&page_token=CAEQAA12345abcdef&$skiptoken=Z2hvc3QtcGFnZS0y"),
    ("secret metadata", '{"secretName": "db", "keyVaultSecretId": "https://kv.vault.azure.net/secrets/db", "passwordPolicy": "strong", "tokenAudience": "api://ghost", "signingKeyId": "k1", "keyType": "RSA", "keySize": 2048, "passwordLastSetDateTime": "2024-01-01T00:00:00Z"}'),
    ("image pull secrets", '{"imagePullSecrets": [{"name": "regcred"}], "envFrom": [{"secretRef": {"name": "app-secrets"}}]}'),
    ("key vault permissions", '{"properties": {"accessPolicies": [{"objectId": "33333333-4444-5555-6666-777777777777", "permissions": {"secrets": ["get", "list"], "keys": ["get", "unwrapKey"], "certificates": []}}], "enableSoftDelete": true, "vaultUri": "https://kv-prod.vault.azure.net/"}, "name": "kv-prod"}'),
    ("vm os profile", '{"osProfile": {"adminUsername": "azureuser", "secrets": [], "allowExtensionOperations": true, "requireGuestProvisionSignal": true, "linuxConfiguration": {"disablePasswordAuthentication": true, "ssh": {"publicKeys": [{"keyData": "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC0 azureuser", "path": "/home/azureuser/.ssh/authorized_keys"}]}}}}'),
    ("pod env by reference", "env:\n- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      key: password\n      name: db-secret\n"),
]
