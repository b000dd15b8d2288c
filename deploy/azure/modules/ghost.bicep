// Ghost's own resources, in its resource group: network, Log Analytics, Key Vault (private
// endpoint), capture storage, PostgreSQL, the Container Apps environment, the web and worker apps
// and the migration job. Deployed by ../main.bicep after modules/identities.bicep, whose outputs
// arrive here as parameters: known at the start of this deployment, so names and variable loops
// may use them (tests/deploy/test_bicep_rules.py checks every such rule).
targetScope = 'resourceGroup'

param location string
param namePrefix string
param image string
@description('Registry login server of a private image (AcrPull granted by ../main.bicep); empty for a public image.')
param registryServer string
param appIdentityName string
param appPrincipalId string
param appClientId string
param migrateIdentityName string
param migratePrincipalId string
param migrateClientId string
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
// one port for everything the web app serves: Slack, Teams (/api/messages), /healthz, /readyz
var webPort = 3000
var vaultName = '${namePrefix}-kv-${take(suffix, 8)}'
var postgresName = '${namePrefix}-pg-${take(suffix, 8)}'
// Key Vault Secrets User (built-in): read secret values, nothing else
var keyVaultSecretsUser = subscriptionResourceId('Microsoft.Authorization/roleDefinitions', '4633458b-17de-408a-b874-0445c86b69e6')
// what an empty parameter is written to Key Vault as: `ghost doctor` names each one still holding it
var unsetMarker = 'ghost-placeholder-unset'

resource appIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' existing = {
  name: appIdentityName
}

resource migrateIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' existing = {
  name: migrateIdentityName
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
        name: 'endpoints'
        properties: {
          addressPrefix: '10.42.3.0/24'
          privateEndpointNetworkPolicies: 'Enabled'
          networkSecurityGroup: {
            id: endpointsNsg.id
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

resource endpointsNsg 'Microsoft.Network/networkSecurityGroups@2024-01-01' = {
  name: '${namePrefix}-endpoints-nsg'
  location: location
  properties: {
    securityRules: [
      {
        name: 'https-from-apps'
        properties: {
          priority: 100
          direction: 'Inbound'
          access: 'Allow'
          protocol: 'Tcp'
          sourceAddressPrefix: '10.42.0.0/23'
          sourcePortRange: '*'
          destinationAddressPrefix: '*'
          destinationPortRange: '443'
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
  name: vaultName
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
    // reached only through the private endpoint in the VNet; the deployment writes the secrets
    // through Azure Resource Manager
    publicNetworkAccess: 'Disabled'
    networkAcls: {
      defaultAction: 'Deny'
      bypass: 'AzureServices'
    }
  }
}

resource vaultDns 'Microsoft.Network/privateDnsZones@2020-06-01' = {
  name: 'privatelink${environment().suffixes.keyvaultDns}'
  location: 'global'
}

resource vaultDnsLink 'Microsoft.Network/privateDnsZones/virtualNetworkLinks@2020-06-01' = {
  parent: vaultDns
  name: '${namePrefix}-vnet'
  location: 'global'
  properties: {
    registrationEnabled: false
    virtualNetwork: {
      id: vnet.id
    }
  }
}

resource vaultEndpoint 'Microsoft.Network/privateEndpoints@2024-01-01' = {
  name: '${vaultName}-pe'
  location: location
  properties: {
    subnet: {
      id: '${vnet.id}/subnets/endpoints'
    }
    privateLinkServiceConnections: [
      {
        name: 'vault'
        properties: {
          privateLinkServiceId: vault.id
          groupIds: [
            'vault'
          ]
        }
      }
    ]
  }
}

resource vaultEndpointDns 'Microsoft.Network/privateEndpoints/privateDnsZoneGroups@2024-01-01' = {
  parent: vaultEndpoint
  name: 'default'
  properties: {
    privateDnsZoneConfigs: [
      {
        name: 'vault'
        properties: {
          privateDnsZoneId: vaultDns.id
        }
      }
    ]
  }
}

// Every secret exists, so every app can reference it: an empty parameter writes the placeholder
// (the app treats it as unset and `ghost doctor` names it). Passing the value on a later
// deployment replaces it.
var secretList = [
  {
    name: 'gemini-api-key'
    env: 'GEMINI_API_KEY'
  }
  {
    name: 'slack-bot-token'
    env: 'SLACK_BOT_TOKEN'
  }
  {
    name: 'slack-signing-secret'
    env: 'SLACK_SIGNING_SECRET'
  }
  {
    name: 'teams-app-password'
    env: 'MicrosoftAppPassword'
  }
]
var secretValues = {
  'gemini-api-key': geminiApiKey
  'slack-bot-token': slackBotToken
  'slack-signing-secret': slackSigningSecret
  'teams-app-password': teamsAppPassword
}

resource secrets 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = [for s in secretList: {
  // checkov:skip=CKV_AZURE_41: these are issued and rotated by Slack, Google and Entra ID; an expiry here would silently stop Ghost reading them
  parent: vault
  name: s.name
  properties: {
    value: empty(secretValues[s.name]) ? unsetMarker : secretValues[s.name]
    contentType: 'text/plain'
  }
}]

resource vaultReader 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: vault
  name: guid(vault.id, appPrincipalId, keyVaultSecretsUser)
  properties: {
    principalId: appPrincipalId
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
  name: guid(storage.id, appPrincipalId, captureStorageRoleId)
  properties: {
    principalId: appPrincipalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: captureStorageRoleId
  }
}

// ------------------------------------------------------------------ PostgreSQL
// Created one step at a time (server, Entra administrator, database, diagnostics): parallel
// changes to one flexible server are a known cause of ServerBusy.
resource postgres 'Microsoft.DBforPostgreSQL/flexibleServers@2024-08-01' = {
  name: postgresName
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

// The migration job's identity is the Entra administrator: it owns the schema and creates the
// apps' role (pgaadauth_create_principal), which owns nothing (docs/storage.md, "Roles").
resource postgresEntraAdmin 'Microsoft.DBforPostgreSQL/flexibleServers/administrators@2024-08-01' = {
  parent: postgres
  name: migratePrincipalId
  properties: {
    principalName: migrateIdentityName
    principalType: 'ServicePrincipal'
    tenantId: subscription().tenantId
  }
}

resource ghostDatabase 'Microsoft.DBforPostgreSQL/flexibleServers/databases@2024-08-01' = {
  parent: postgres
  name: 'ghost'
  properties: {
    charset: 'UTF8'
    collation: 'en_US.utf8'
  }
  dependsOn: [
    postgresEntraAdmin
  ]
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
  dependsOn: [
    ghostDatabase
  ]
}

// ------------------------------------------------------------------ Container Apps
resource appsEnvironment 'Microsoft.App/managedEnvironments@2024-03-01' = {
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

// Key Vault references by name: the vault's URI is built from its name and the cloud's suffix
// (known at the start) rather than read from the vault (known only during the deployment).
var appSecrets = [for s in secretList: {
  name: s.name
  keyVaultUrl: 'https://${vaultName}${environment().suffixes.keyvaultDns}/secrets/${s.name}'
  identity: appIdentity.id
}]
var secretEnvVars = [for s in secretList: {
  name: s.env
  secretRef: s.name
}]
var plainEnv = [for s in items(union({
  GHOST_LOG_FORMAT: 'json'
  GHOST_DATA_DIR: '/var/lib/ghost'
  GHOST_AZURE_SUBSCRIPTION_ID: subscriptionId
  GHOST_AZURE_STORAGE_AUTH_MODE: 'login'
  GHOST_CAPTURE_STORAGE_ACCOUNT: storage.id
  GHOST_TEAMS_ALLOWED_TENANTS: subscription().tenantId
  GHOST_DATABASE_AUTH: 'azure'
  AZURE_CLIENT_ID: appClientId
  PORT: string(webPort)
  GHOST_TEAMS_PORT: string(webPort)
}, extraSettings)): {
  name: s.key
  value: string(s.value)
}]
// the apps sign in to PostgreSQL as their identity, with a token for a password
var appDatabaseUrl = 'postgresql://${appIdentityName}@${postgresName}.postgres.database.azure.com:5432/ghost?sslmode=require'
var registries = empty(registryServer) ? [] : [
  {
    server: registryServer
    identity: appIdentity.id
  }
]
var probes = [
  {
    type: 'Liveness'
    httpGet: {
      path: '/healthz'
      port: webPort
    }
    periodSeconds: 10
    failureThreshold: 3
  }
  {
    type: 'Readiness'
    httpGet: {
      path: '/readyz'
      port: webPort
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
      '${appIdentity.id}': {}
    }
  }
  properties: {
    environmentId: appsEnvironment.id
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
              name: 'GHOST_DATABASE_URL'
              value: appDatabaseUrl
            }
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
    vaultEndpointDns
    secrets
    ghostDatabase
  ]
}

resource worker 'Microsoft.App/containerApps@2024-03-01' = {
  name: '${namePrefix}-worker'
  location: location
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${appIdentity.id}': {}
    }
  }
  properties: {
    environmentId: appsEnvironment.id
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
          env: concat(plainEnv, secretEnvVars, [
            {
              name: 'GHOST_DATABASE_URL'
              value: appDatabaseUrl
            }
          ])
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
    vaultEndpointDns
    secrets
    ghostDatabase
  ]
}

// `ghost db upgrade` as the Entra administrator (the migrate identity): creates or migrates the
// schema, creates the apps' role if it is missing and grants it what Ghost needs, nothing more.
resource migrate 'Microsoft.App/jobs@2024-03-01' = {
  name: '${namePrefix}-migrate'
  location: location
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${migrateIdentity.id}': {}
    }
  }
  properties: {
    environmentId: appsEnvironment.id
    workloadProfileName: 'Consumption'
    configuration: {
      triggerType: 'Manual'
      replicaTimeout: 600
      replicaRetryLimit: 1
      manualTriggerConfig: {
        parallelism: 1
        replicaCompletionCount: 1
      }
      registries: empty(registryServer) ? [] : [
        {
          server: registryServer
          identity: migrateIdentity.id
        }
      ]
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
          env: [
            {
              name: 'GHOST_LOG_FORMAT'
              value: 'json'
            }
            {
              name: 'GHOST_DATABASE_AUTH'
              value: 'azure'
            }
            {
              name: 'AZURE_CLIENT_ID'
              value: migrateClientId
            }
            {
              name: 'GHOST_DATABASE_URL'
              value: 'postgresql://${migrateIdentityName}@${postgresName}.postgres.database.azure.com:5432/ghost?sslmode=require'
            }
            {
              name: 'GHOST_DATABASE_APP_ROLE'
              value: appIdentityName
            }
            {
              name: 'GHOST_AZ_LOGIN'
              value: 'false'
            }
          ]
          resources: {
            cpu: json('0.5')
            memory: '1Gi'
          }
        }
      ]
    }
  }
  dependsOn: [
    ghostDatabase
  ]
}

output webUrl string = 'https://${web.properties.configuration.ingress.fqdn}'
output keyVaultName string = vault.name
output captureStorageAccount string = storage.name
output captureStorageAccountId string = storage.id
output captureContainer string = captureContainer.name
output migrateJobName string = migrate.name
output logAnalyticsWorkspace string = logs.name
