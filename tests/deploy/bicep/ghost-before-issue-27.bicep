// Ghost's own resources, in its resource group: identity, network, Log Analytics, Key Vault,
// capture storage, PostgreSQL, the Container Apps environment, the web and worker apps and the
// migration job. Deployed by ../main.bicep.
targetScope = 'resourceGroup'

param location string
param namePrefix string
param image string
param registryServer string
param chatPlatform string
param webReplicas int
param workerReplicas int
param captureRetentionDays int
param postgresAdminLogin string
@secure()
param postgresAdminPassword string
param postgresSkuName string
param postgresSkuTier string
@secure()
param geminiApiKey string
@secure()
param slackBotToken string
@secure()
param slackSigningSecret string
@secure()
param teamsAppPassword string
param extraSettings object
param captureStorageRoleId string
param subscriptionId string

var suffix = uniqueString(resourceGroup().id, namePrefix)
var captureContainerName = 'captures'
var webPort = chatPlatform == 'slack' ? 3000 : 3978
// Key Vault Secrets User (built-in): read secret values, nothing else
var keyVaultSecretsUser = subscriptionResourceId('Microsoft.Authorization/roleDefinitions', '4633458b-17de-408a-b874-0445c86b69e6')

// ------------------------------------------------------------------ identity
resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: '${namePrefix}-identity'
  location: location
}

// ------------------------------------------------------------------ network
resource vnet 'Microsoft.Network/virtualNetworks@2024-01-01' = {
  name: '${namePrefix}-vnet'
  location: location
  properties: {
    addressSpace: {
      addressPrefixes: [
        '10.42.0.0/16'
      ]
    }
    subnets: [
      {
        name: 'apps'
        properties: {
          addressPrefix: '10.42.0.0/23'
          delegations: [
            {
              name: 'containerapps'
              properties: {
                serviceName: 'Microsoft.App/environments'
              }
            }
          ]
          networkSecurityGroup: {
            id: appsNsg.id
          }
        }
      }
      {
        name: 'postgres'
        properties: {
          addressPrefix: '10.42.2.0/24'
          delegations: [
            {
              name: 'postgres'
              properties: {
                serviceName: 'Microsoft.DBforPostgreSQL/flexibleServers'
              }
            }
          ]
          networkSecurityGroup: {
            id: postgresNsg.id
          }
        }
      }
    ]
  }
}

resource appsNsg 'Microsoft.Network/networkSecurityGroups@2024-01-01' = {
  name: '${namePrefix}-apps-nsg'
  location: location
  properties: {
    securityRules: [
      {
        name: 'https-in'
        properties: {
          priority: 100
          direction: 'Inbound'
          access: 'Allow'
          protocol: 'Tcp'
          sourceAddressPrefix: 'Internet'
          sourcePortRange: '*'
          destinationAddressPrefix: '*'
          destinationPortRanges: [
            '443'
          ]
        }
      }
    ]
  }
}

resource postgresNsg 'Microsoft.Network/networkSecurityGroups@2024-01-01' = {
  name: '${namePrefix}-postgres-nsg'
  location: location
  properties: {
    securityRules: [
      {
        name: 'postgres-from-apps'
        properties: {
          priority: 100
          direction: 'Inbound'
          access: 'Allow'
          protocol: 'Tcp'
          sourceAddressPrefix: '10.42.0.0/23'
          sourcePortRange: '*'
          destinationAddressPrefix: '*'
          destinationPortRange: '5432'
        }
      }
    ]
  }
}

resource postgresDns 'Microsoft.Network/privateDnsZones@2020-06-01' = {
  name: '${namePrefix}.private.postgres.database.azure.com'
  location: 'global'
}

resource postgresDnsLink 'Microsoft.Network/privateDnsZones/virtualNetworkLinks@2020-06-01' = {
  parent: postgresDns
  name: '${namePrefix}-vnet'
  location: 'global'
  properties: {
    registrationEnabled: false
    virtualNetwork: {
      id: vnet.id
    }
  }
}

// ------------------------------------------------------------------ logs
resource logs 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: '${namePrefix}-logs'
  location: location
  properties: {
    sku: {
      name: 'PerGB2018'
    }
    retentionInDays: 90
  }
}

// ------------------------------------------------------------------ secrets
resource vault 'Microsoft.KeyVault/vaults@2023-07-01' = {
  // checkov:skip=CKV_AZURE_109: Container Apps reads its Key Vault references from outside the vault's firewall (the platform, not our subnet); access is by Entra ID RBAC only
  // checkov:skip=CKV_AZURE_189: same reason: public network access stays on, every request needs the identity's RBAC role
  name: '${namePrefix}-kv-${take(suffix, 8)}'
  location: location
  properties: {
    tenantId: subscription().tenantId
    sku: {
      family: 'A'
      name: 'standard'
    }
    enableRbacAuthorization: true
    enableSoftDelete: true
    softDeleteRetentionInDays: 90
    enablePurgeProtection: true
    publicNetworkAccess: 'Enabled'
    networkAcls: {
      defaultAction: 'Allow'
      bypass: 'AzureServices'
    }
  }
}

var secretValues = {
  'database-url': 'postgresql://${postgresAdminLogin}:${postgresAdminPassword}@${postgres.properties.fullyQualifiedDomainName}:5432/ghost?sslmode=require'
  'gemini-api-key': geminiApiKey
  'slack-bot-token': slackBotToken
  'slack-signing-secret': slackSigningSecret
  'teams-app-password': teamsAppPassword
}
// the secrets that have a value, each with the environment variable Ghost reads it from
var presentSecrets = concat([
  {
    name: 'database-url'
    env: 'GHOST_DATABASE_URL'
  }
], empty(geminiApiKey) ? [] : [
  {
    name: 'gemini-api-key'
    env: 'GEMINI_API_KEY'
  }
], empty(slackBotToken) ? [] : [
  {
    name: 'slack-bot-token'
    env: 'SLACK_BOT_TOKEN'
  }
], empty(slackSigningSecret) ? [] : [
  {
    name: 'slack-signing-secret'
    env: 'SLACK_SIGNING_SECRET'
  }
], empty(teamsAppPassword) ? [] : [
  {
    name: 'teams-app-password'
    env: 'MicrosoftAppPassword'
  }
])

resource secrets 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = [for s in presentSecrets: {
  // checkov:skip=CKV_AZURE_41: these are issued and rotated by Slack, Google, Entra ID and this deployment; an expiry here would silently stop Ghost reading them
  parent: vault
  name: s.name
  properties: {
    value: secretValues[s.name]
    contentType: 'text/plain'
  }
}]

resource vaultReader 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: vault
  name: guid(vault.id, identity.id, keyVaultSecretsUser)
  properties: {
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: keyVaultSecretsUser
  }
}

// ------------------------------------------------------------------ capture storage
resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  // checkov:skip=CKV_AZURE_35: Network Watcher's agent uploads captures from the investigated VMs' own networks, which a storage firewall would block; every request needs Entra ID or a SAS
  // checkov:skip=CKV_AZURE_59: same reason: the capture uploads arrive over the public endpoint
  // checkov:skip=CKV_AZURE_206: captures are transient evidence copied into Ghost's data dir; locally redundant is enough
  // checkov:skip=CKV_AZURE_43: the name is computed: the prefix without dashes + 'cap' + uniqueString, lowercase letters and digits, at most 24 characters
  // Shared key access stays on: Network Watcher writes captures with a service SAS, which is
  // signed with the account key; Ghost itself reads and deletes with Entra ID (login mode).
  name: toLower('${take(replace(namePrefix, '-', ''), 11)}cap${take(suffix, 10)}')
  location: location
  sku: {
    name: 'Standard_LRS'
  }
  kind: 'StorageV2'
  properties: {
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
    allowBlobPublicAccess: false
    allowSharedKeyAccess: true
    allowCrossTenantReplication: false
    defaultToOAuthAuthentication: true
    publicNetworkAccess: 'Enabled'
    encryption: {
      requireInfrastructureEncryption: true
      keySource: 'Microsoft.Storage'
      services: {
        blob: {
          enabled: true
        }
        file: {
          enabled: true
        }
      }
    }
    networkAcls: {
      defaultAction: 'Allow'
      bypass: 'AzureServices'
    }
  }
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: storage
  name: 'default'
  properties: {
    deleteRetentionPolicy: {
      enabled: true
      days: 7
    }
    containerDeleteRetentionPolicy: {
      enabled: true
      days: 7
    }
  }
}

resource captureContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: captureContainerName
  properties: {
    publicAccess: 'None'
  }
}

resource captureLifecycle 'Microsoft.Storage/storageAccounts/managementPolicies@2023-05-01' = {
  parent: storage
  name: 'default'
  properties: {
    policy: {
      rules: [
        {
          name: 'delete-old-captures'
          enabled: true
          type: 'Lifecycle'
          definition: {
            filters: {
              blobTypes: [
                'blockBlob'
                'appendBlob'
              ]
              prefixMatch: [
                '${captureContainerName}/'
              ]
            }
            actions: {
              baseBlob: {
                delete: {
                  daysAfterModificationGreaterThan: captureRetentionDays
                }
              }
            }
          }
        }
      ]
    }
  }
}

resource captureAccess 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: storage
  name: guid(storage.id, identity.id, captureStorageRoleId)
  properties: {
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: captureStorageRoleId
  }
}

// ------------------------------------------------------------------ PostgreSQL
resource postgres 'Microsoft.DBforPostgreSQL/flexibleServers@2022-12-01' = {
  name: '${namePrefix}-pg-${take(suffix, 8)}'
  location: location
  sku: {
    name: postgresSkuName
    tier: postgresSkuTier
  }
  properties: {
    version: '16'
    administratorLogin: postgresAdminLogin
    administratorLoginPassword: postgresAdminPassword
    authConfig: {
      activeDirectoryAuth: 'Enabled'
      passwordAuth: 'Enabled'
      tenantId: subscription().tenantId
    }
    storage: {
      storageSizeGB: 32
    }
    backup: {
      backupRetentionDays: 14
      geoRedundantBackup: 'Enabled'
    }
    network: {
      delegatedSubnetResourceId: '${vnet.id}/subnets/postgres'
      privateDnsZoneArmResourceId: postgresDns.id
    }
    highAvailability: {
      mode: 'Disabled'
    }
  }
  dependsOn: [
    postgresDnsLink
  ]
}

resource postgresEntraAdmin 'Microsoft.DBforPostgreSQL/flexibleServers/administrators@2022-12-01' = {
  parent: postgres
  name: identity.properties.principalId
  properties: {
    principalName: identity.name
    principalType: 'ServicePrincipal'
    tenantId: subscription().tenantId
  }
}

resource ghostDatabase 'Microsoft.DBforPostgreSQL/flexibleServers/databases@2022-12-01' = {
  parent: postgres
  name: 'ghost'
  properties: {
    charset: 'UTF8'
    collation: 'en_US.utf8'
  }
}

resource postgresLogs 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  scope: postgres
  name: 'to-log-analytics'
  properties: {
    workspaceId: logs.id
    logs: [
      {
        categoryGroup: 'allLogs'
        enabled: true
      }
    ]
  }
}

// ------------------------------------------------------------------ Container Apps
resource environment 'Microsoft.App/managedEnvironments@2024-03-01' = {
  name: '${namePrefix}-env'
  location: location
  properties: {
    appLogsConfiguration: {
      destination: 'log-analytics'
      logAnalyticsConfiguration: {
        customerId: logs.properties.customerId
        sharedKey: logs.listKeys().primarySharedKey
      }
    }
    vnetConfiguration: {
      infrastructureSubnetId: '${vnet.id}/subnets/apps'
      internal: false
    }
    workloadProfiles: [
      {
        name: 'Consumption'
        workloadProfileType: 'Consumption'
      }
    ]
    zoneRedundant: false
  }
}

var appSecrets = [for s in presentSecrets: {
  name: s.name
  keyVaultUrl: '${vault.properties.vaultUri}secrets/${s.name}'
  identity: identity.id
}]
var secretEnvVars = [for s in presentSecrets: {
  name: s.env
  secretRef: s.name
}]
var plainEnv = [for s in items(union({
  GHOST_LOG_FORMAT: 'json'
  GHOST_DATA_DIR: '/var/lib/ghost'
  GHOST_AZURE_SUBSCRIPTION_ID: subscriptionId
  GHOST_AZURE_STORAGE_AUTH_MODE: 'login'
  AZURE_CLIENT_ID: identity.properties.clientId
  PORT: '3000'
  GHOST_TEAMS_PORT: '3978'
}, extraSettings)): {
  name: s.key
  value: string(s.value)
}]
var registries = empty(registryServer) ? [] : [
  {
    server: registryServer
    identity: identity.id
  }
]
var probes = [
  {
    type: 'Liveness'
    httpGet: {
      path: '/healthz'
      port: 3000
    }
    periodSeconds: 10
    failureThreshold: 3
  }
  {
    type: 'Readiness'
    httpGet: {
      path: '/readyz'
      port: 3000
    }
    periodSeconds: 10
    failureThreshold: 3
  }
]

resource web 'Microsoft.App/containerApps@2024-03-01' = {
  name: '${namePrefix}-web'
  location: location
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${identity.id}': {}
    }
  }
  properties: {
    environmentId: environment.id
    workloadProfileName: 'Consumption'
    configuration: {
      activeRevisionsMode: 'Single'
      ingress: {
        external: true
        targetPort: webPort
        transport: 'http'
        allowInsecure: false
      }
      secrets: appSecrets
      registries: registries
    }
    template: {
      containers: [
        {
          name: 'ghost'
          image: image
          args: [
            'serve'
            '--no-worker'
          ]
          env: concat(plainEnv, secretEnvVars, [
            {
              name: 'GHOST_SERVE_RUNS_WORKER'
              value: 'false'
            }
          ])
          resources: {
            cpu: json('0.5')
            memory: '1Gi'
          }
          probes: probes
        }
      ]
      scale: {
        minReplicas: webReplicas
        maxReplicas: max(webReplicas, 5)
      }
    }
  }
  dependsOn: [
    vaultReader
    secrets
  ]
}

resource worker 'Microsoft.App/containerApps@2024-03-01' = {
  name: '${namePrefix}-worker'
  location: location
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${identity.id}': {}
    }
  }
  properties: {
    environmentId: environment.id
    workloadProfileName: 'Consumption'
    configuration: {
      activeRevisionsMode: 'Single'
      secrets: appSecrets
      registries: registries
    }
    template: {
      containers: [
        {
          name: 'ghost'
          image: image
          args: [
            'worker'
          ]
          env: concat(plainEnv, secretEnvVars)
          resources: {
            cpu: json('1.0')
            memory: '2Gi'
          }
        }
      ]
      scale: {
        minReplicas: workerReplicas
        maxReplicas: workerReplicas
      }
    }
  }
  dependsOn: [
    vaultReader
    secrets
  ]
}

resource migrate 'Microsoft.App/jobs@2024-03-01' = {
  name: '${namePrefix}-migrate'
  location: location
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${identity.id}': {}
    }
  }
  properties: {
    environmentId: environment.id
    workloadProfileName: 'Consumption'
    configuration: {
      triggerType: 'Manual'
      replicaTimeout: 600
      replicaRetryLimit: 1
      manualTriggerConfig: {
        parallelism: 1
        replicaCompletionCount: 1
      }
      secrets: appSecrets
      registries: registries
    }
    template: {
      containers: [
        {
          name: 'ghost-migrate'
          image: image
          args: [
            'db'
            'upgrade'
          ]
          env: concat(plainEnv, secretEnvVars, [
            {
              name: 'GHOST_AZ_LOGIN'
              value: 'false'
            }
          ])
          resources: {
            cpu: json('0.5')
            memory: '1Gi'
          }
        }
      ]
    }
  }
  dependsOn: [
    vaultReader
    secrets
  ]
}

output identityPrincipalId string = identity.properties.principalId
output identityClientId string = identity.properties.clientId
output webUrl string = 'https://${web.properties.configuration.ingress.fqdn}'
output keyVaultName string = vault.name
output captureStorageAccount string = storage.name
output captureContainer string = captureContainer.name
output migrateJobName string = migrate.name
output logAnalyticsWorkspace string = logs.name
