-- =============================================================================
-- Demo ERP database – demo data for the embedded PostgreSQL (PGlite).
--
-- Loaded after 010-erp-schema.sql into a fresh database.
-- Everything is DETERMINISTIC: no random(), no now(); values are derived from
-- generate_series() arithmetic and md5()-based uuids, so every load produces
-- byte-identical data (stable test expectations, stable ETags, ...).
--
-- Flag semantics used throughout: 1 = yes, 0 = no, -1 = undefined / blocked.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- 1. SUBJECT – 60 business partners
-- -----------------------------------------------------------------------------
-- ID 1 is the well-known demo partner used by tests (webhook secret!).
INSERT INTO dbo."SUBJECT" (
    "ID", "NAZEV", "ICO", "DIC", "ULICE", "MESTO", "PSC", "STAT", "EMAIL", "TELEFON",
    "WEBHOOK_URL", "SECRET_WEBHOOK", "AKTIVNI", "DATUM_ZALOZENI"
) VALUES (
    1, 'Alfa Trade s.r.o.', '25596641', 'CZ25596641', 'Vinohradská 1511/230', 'Praha', '100 00', 'CZ',
    'fakturace@alfatrade.cz', '+420 224 123 456',
    'https://erp-partner-1.example.cz/peppol/webhook', 'demo-webhook-secret', 1, '1998-03-12 10:15:00'
);

-- IDs 2..60: names are listed, everything else is derived arithmetically.
INSERT INTO dbo."SUBJECT" (
    "ID", "NAZEV", "ICO", "DIC", "ULICE", "MESTO", "PSC", "STAT", "EMAIL", "TELEFON",
    "WEBHOOK_URL", "SECRET_WEBHOOK", "AKTIVNI", "DATUM_ZALOZENI"
)
SELECT
    v.g,
    v.nazev,
    CASE WHEN v.stat = 'CZ' THEN i.ico END,
    CASE
        WHEN v.stat = 'CZ' AND v.g % 8 = 5 THEN NULL                  -- neplátce DPH
        WHEN v.stat = 'CZ' THEN 'CZ' || i.ico
        WHEN v.stat = 'SK' THEN 'SK' || (2020000000 + (v.g * 7919) % 999999)::text
        WHEN v.stat = 'DE' THEN 'DE' || (100000000 + (v.g * 104729) % 899999999)::text
        ELSE 'ATU' || (10000000 + (v.g * 7919) % 89999999)::text
    END,
    CASE WHEN v.g % 19 = 11 THEN NULL
         ELSE (ARRAY['Vinohradská', 'Masarykova', 'Nádražní', 'Palackého', 'Husova', 'Komenského',
                     'Průmyslová', 'Zahradní', 'Štefánikova', 'Třída Svobody', 'Jiráskova',
                     'Na Příkopě', 'Dlouhá', 'Polní', 'Žižkova', 'U Stadionu', 'Tovární',
                     'Hlavní', 'Lidická', 'Českobratrská'])[(v.g * 7) % 20 + 1]
              || ' ' || ((v.g * 7919) % 2900 + 100)::text || '/' || ((v.g * 13) % 90 + 1)::text
    END,
    c.mesto,
    c.psc,
    v.stat,
    CASE WHEN v.g % 11 = 4 THEN NULL
         ELSE (ARRAY['info', 'fakturace', 'ucetni', 'obchod'])[v.g % 4 + 1] || '@' || v.domena || '.'
              || CASE v.stat WHEN 'CZ' THEN 'cz' WHEN 'SK' THEN 'sk' WHEN 'DE' THEN 'de' ELSE 'at' END
    END,
    CASE WHEN v.g % 13 = 6 THEN NULL
         ELSE CASE v.stat WHEN 'CZ' THEN '+420' WHEN 'SK' THEN '+421' WHEN 'DE' THEN '+49' ELSE '+43' END
              || ' ' || (200 + (v.g * 37) % 600)::text
              || ' ' || lpad(((v.g * 7919) % 1000)::text, 3, '0')
              || ' ' || lpad(((v.g * 104729) % 1000)::text, 3, '0')
    END,
    CASE WHEN v.g IN (7, 17, 27, 37, 47)
         THEN 'https://erp-partner-' || v.g || '.example.cz/peppol/webhook' END,
    CASE WHEN v.g IN (7, 17, 27, 37)                                 -- 47: URL without secret
         THEN 'whsec_' || substr(md5('webhook-secret-' || v.g), 1, 24) END,
    CASE WHEN v.g % 23 = 0 THEN -1 WHEN v.g % 9 = 0 THEN 0 ELSE 1 END,
    CASE WHEN v.g % 17 = 3 THEN NULL
         ELSE timestamp '1995-01-02 08:00:00'
              + ((v.g * 7919) % 10000) * interval '1 day'
              + ((v.g * 97) % 540) * interval '1 minute'
    END
FROM (VALUES
    ( 2, 'Beta Stav s.r.o.',                       'betastav',              'CZ'),
    ( 3, 'Moravská strojírna a.s.',                'moravskastrojirna',     'CZ'),
    ( 4, 'Pekárna U Mlýna s.r.o.',                 'pekarnaumlyna',         'CZ'),
    ( 5, 'Novák & Syn, v.o.s.',                    'novaksyn',              'CZ'),
    ( 6, 'Elektro Dvořák s.r.o.',                  'elektrodvorak',         'CZ'),
    ( 7, 'Česká logistika a.s.',                   'ceskalogistika',        'CZ'),
    ( 8, 'Zelená energie s.r.o.',                  'zelenaenergie',         'CZ'),
    ( 9, 'Hanácká potravinářská a.s.',             'hanackapotravinarska',  'CZ'),
    (10, 'Kovovýroba Šťastný s.r.o.',              'kovovyroba-stastny',    'CZ'),
    (11, 'Autodoprava Procházka s.r.o.',           'autodoprava-prochazka', 'CZ'),
    (12, 'Softwarové studio Krejčí s.r.o.',        'krejci-software',       'CZ'),
    (13, 'Tiskárna Vltava s.r.o.',                 'tiskarnavltava',        'CZ'),
    (14, 'Ostravské stavby a.s.',                  'ostravskestavby',       'CZ'),
    (15, 'Plzeňská obchodní s.r.o.',               'plzenskaobchodni',      'CZ'),
    (16, 'Brněnský velkoobchod s.r.o.',            'brnenskyvelkoobchod',   'CZ'),
    (17, 'Olomoucké pekárny a.s.',                 'olomouckepekarny',      'CZ'),
    (18, 'Kancelářské potřeby Horák s.r.o.',       'horak-kancelar',        'CZ'),
    (19, 'Účetní kancelář Benešová s.r.o.',        'benesova-ucetnictvi',   'CZ'),
    (20, 'Dřevozpracující družstvo Jeseník',       'drevojesenik',          'CZ'),
    (21, 'Gama Consulting s.r.o.',                 'gamaconsulting',        'CZ'),
    (22, 'Delta Facility a.s.',                    'deltafacility',         'CZ'),
    (23, 'Stavebniny Kučera s.r.o.',               'stavebniny-kucera',     'CZ'),
    (24, 'Pivovar Černý kůň s.r.o.',               'pivovarcernykun',       'CZ'),
    (25, 'Vinařství Pálava s.r.o.',                'vinarstvipalava',       'CZ'),
    (26, 'Zahradnictví Růžička s.r.o.',            'zahradnictvi-ruzicka',  'CZ'),
    (27, 'IT Servis Pokorný s.r.o.',               'itservis-pokorny',      'CZ'),
    (28, 'Sklárna Karolína a.s.',                  'sklarnakarolina',       'CZ'),
    (29, 'Mlékárna Valašsko a.s.',                 'mlekarnavalassko',      'CZ'),
    (30, 'Textil Liberec s.r.o.',                  'textilliberec',         'CZ'),
    (31, 'Auto Marek s.r.o.',                      'automarek',             'CZ'),
    (32, 'Lékárna Na Náměstí s.r.o.',              'lekarnanamesti',        'CZ'),
    (33, 'Chemické závody Kolín a.s.',             'chemickezavodykolin',   'CZ'),
    (34, 'Stavební firma Veselý s.r.o.',           'stavby-vesely',         'CZ'),
    (35, 'Úklidové služby Čistota s.r.o.',         'uklid-cistota',         'CZ'),
    (36, 'Energetika Třebíč a.s.',                 'energetikatrebic',      'CZ'),
    (37, 'Omega Systems s.r.o.',                   'omegasystems',          'CZ'),
    (38, 'Nábytek Jelínek s.r.o.',                 'nabytek-jelinek',       'CZ'),
    (39, 'Papírnictví Svoboda s.r.o.',             'papirnictvi-svoboda',   'CZ'),
    (40, 'Strojírny Polička a.s.',                 'strojirnypolicka',      'CZ'),
    (41, 'Reklamní agentura Kreativ s.r.o.',       'kreativ-reklama',       'CZ'),
    (42, 'Cestovní kancelář Slunce s.r.o.',        'ck-slunce',             'CZ'),
    (43, 'Hotel Zlatá Hvězda s.r.o.',              'hotelzlatahvezda',      'CZ'),
    (44, 'Autoservis Kratochvíl s.r.o.',           'autoservis-kratochvil', 'CZ'),
    (45, 'Elektromontáže Němec s.r.o.',            'elektromontaze-nemec',  'CZ'),
    (46, 'Slovenská obchodná s.r.o.',              'slovenskaobchodna',     'SK'),
    (47, 'Müller Handels GmbH',                    'mueller-handels',       'DE'),
    (48, 'Teplárny Hradec a.s.',                   'teplarnyhradec',        'CZ'),
    (49, 'Kamenictví Dušek s.r.o.',                'kamenictvi-dusek',      'CZ'),
    (50, 'Farma Zelený Háj s.r.o.',                'farmazelenyhaj',        'CZ'),
    (51, 'Doprava Malý s.r.o.',                    'doprava-maly',          'CZ'),
    (52, 'Rybářství Třeboň a.s.',                  'rybarstvitrebon',       'CZ'),
    (53, 'Lesy Vysočina s.r.o.',                   'lesyvysocina',          'CZ'),
    (54, 'Obchodní dům Prior a.s.',                'od-prior',              'CZ'),
    (55, 'Zámečnictví Havel s.r.o.',               'zamecnictvi-havel',     'CZ'),
    (56, 'Optika Brýle s.r.o.',                    'optikabryle',           'CZ'),
    (57, 'Wiener Software GmbH',                   'wienersoftware',        'AT'),
    (58, 'Bratislavská stavebná a.s.',             'bratislavskastavebna',  'SK'),
    (59, 'Sigma Trade s.r.o.',                     'sigmatrade',            'CZ'),
    (60, 'Kappa Distribuce a.s.',                  'kappadistribuce',       'CZ')
) AS v(g, nazev, domena, stat)
CROSS JOIN LATERAL (
    -- 7 digits + mod-11 check digit (valid Czech IČO)
    SELECT lpad(((v.g * 1234577) % 9000000 + 1000000)::text, 7, '0') AS b
) AS b
CROSS JOIN LATERAL (
    SELECT b.b || ((11 - (  8 * substr(b.b, 1, 1)::int + 7 * substr(b.b, 2, 1)::int
                          + 6 * substr(b.b, 3, 1)::int + 5 * substr(b.b, 4, 1)::int
                          + 4 * substr(b.b, 5, 1)::int + 3 * substr(b.b, 6, 1)::int
                          + 2 * substr(b.b, 7, 1)::int) % 11) % 10)::text AS ico
) AS i
CROSS JOIN LATERAL (
    SELECT
        CASE v.stat
            WHEN 'SK' THEN 'Bratislava'
            WHEN 'DE' THEN 'München'
            WHEN 'AT' THEN 'Wien'
            ELSE (ARRAY['Praha', 'Brno', 'Ostrava', 'Plzeň', 'Olomouc', 'Liberec', 'České Budějovice',
                        'Hradec Králové', 'Pardubice', 'Zlín', 'Jihlava', 'Ústí nad Labem',
                        'Karlovy Vary', 'Kladno', 'Opava'])[v.g % 15 + 1]
        END AS mesto,
        CASE v.stat
            WHEN 'SK' THEN '811 01'
            WHEN 'DE' THEN '80331'
            WHEN 'AT' THEN '1010'
            ELSE (ARRAY['110 00', '602 00', '702 00', '301 00', '779 00', '460 01', '370 01',
                        '500 02', '530 02', '760 01', '586 01', '400 01', '360 01', '272 01',
                        '746 01'])[v.g % 15 + 1]
        END AS psc
) AS c;

-- -----------------------------------------------------------------------------
-- 2. UCET – chart of accounts (Czech "směrná účtová osnova", analytical accounts)
--    ZUSTATEK: credit balances negative, some accounts without balance (NULL).
-- -----------------------------------------------------------------------------
INSERT INTO dbo."UCET" ("KOD_UCTU", "NAZEV", "TYP", "ZUSTATEK", "AKTIVNI") VALUES
    ('013000', 'Software',                                          'A',    845000.00,  1),
    ('022000', 'Samostatné hmotné movité věci',                     'A',   4120500.00,  1),
    ('042000', 'Nedokončený dlouhodobý hmotný majetek',             'A',    310000.00,  1),
    ('073000', 'Oprávky k softwaru',                                'A',   -512300.00,  1),
    ('082000', 'Oprávky k samostatným hmotným movitým věcem',       'A',  -2356780.00,  1),
    ('112000', 'Materiál na skladě',                                'A',    689412.50,  1),
    ('132000', 'Zboží na skladě',                                   'A',   1523004.90,  1),
    ('211000', 'Pokladna',                                          'A',     48250.00,  1),
    ('211100', 'Pokladna EUR',                                      'A',     12375.40,  1),
    ('213000', 'Ceniny',                                            'A',      3400.00,  0),
    ('221001', 'Bankovní účty – Komerční banka CZK',                'A',   3875412.77,  1),
    ('221002', 'Bankovní účty – ČSOB EUR',                          'A',    562300.15,  1),
    ('221003', 'Bankovní účty – Fio banka',                         'A',         NULL, -1),
    ('261000', 'Peníze na cestě',                                   'A',         0.00,  1),
    ('311000', 'Odběratelé',                                        'A',   6254120.30,  1),
    ('311100', 'Odběratelé – zahraniční',                           'A',    982450.00,  1),
    ('314000', 'Poskytnuté zálohy',                                 'A',    150000.00,  1),
    ('315000', 'Ostatní pohledávky',                                'A',         NULL,  0),
    ('321000', 'Dodavatelé',                                        'P',  -4123987.45,  1),
    ('321100', 'Dodavatelé – zahraniční',                           'P',   -712004.10,  1),
    ('324000', 'Přijaté zálohy',                                    'P',   -245000.00,  1),
    ('331000', 'Zaměstnanci',                                       'P',   -986540.00,  1),
    ('336000', 'Zúčtování s institucemi sociálního a zdravotního pojištění', 'P', -412890.00, 1),
    ('341000', 'Daň z příjmů',                                      'P',   -325000.00,  1),
    ('342000', 'Ostatní přímé daně',                                'P',   -118760.00,  1),
    ('343012', 'DPH na výstupu 12 %',                               'P',   -142087.20,  1),
    ('343021', 'DPH na výstupu 21 %',                               'P',   -896412.35,  1),
    ('343112', 'DPH na vstupu 12 %',                                'P',     58210.60,  1),
    ('343121', 'DPH na vstupu 21 %',                                'P',    512307.95,  1),
    ('343900', 'DPH – zúčtování s finančním úřadem',                'P',         NULL,  1),
    ('345000', 'Ostatní daně a poplatky',                           'P',     -7500.00,  0),
    ('355000', 'Pohledávky za společníky',                          'A',         NULL, -1),
    ('378000', 'Jiné pohledávky',                                   'A',     21800.00,  1),
    ('379000', 'Jiné závazky',                                      'P',    -35420.00,  1),
    ('381000', 'Náklady příštích období',                           'A',     96000.00,  1),
    ('383000', 'Výdaje příštích období',                            'P',    -44500.00,  1),
    ('395000', 'Vnitřní zúčtování',                                 'A',         0.00,  1),
    ('411000', 'Základní kapitál',                                  'P',  -2000000.00,  1),
    ('421000', 'Rezervní fond',                                     'P',   -200000.00,  1),
    ('428000', 'Nerozdělený zisk minulých let',                     'P',  -5412380.65,  1),
    ('429000', 'Neuhrazená ztráta minulých let',                    'P',         NULL,  0),
    ('431000', 'Výsledek hospodaření ve schvalovacím řízení',       'P',  -1245600.00,  1),
    ('461000', 'Závazky k úvěrovým institucím',                     'P',  -3500000.00,  1),
    ('501000', 'Spotřeba materiálu',                                'N',   2145870.40,  1),
    ('502000', 'Spotřeba energie',                                  'N',    687420.00,  1),
    ('504000', 'Prodané zboží',                                     'N',   9874512.30,  1),
    ('511000', 'Opravy a udržování',                                'N',    412300.00,  1),
    ('512000', 'Cestovné',                                          'N',    154820.00,  1),
    ('513000', 'Náklady na reprezentaci',                           'N',     48760.00,  1),
    ('518000', 'Ostatní služby',                                    'N',   1987450.25,  1),
    ('521000', 'Mzdové náklady',                                    'N',   8450000.00,  1),
    ('524000', 'Zákonné sociální a zdravotní pojištění',            'N',   2856100.00,  1),
    ('527000', 'Zákonné sociální náklady',                          'N',    112400.00,  1),
    ('538000', 'Ostatní daně a poplatky',                           'N',     23150.00,  1),
    ('543000', 'Dary',                                              'N',         NULL,  0),
    ('548000', 'Ostatní provozní náklady',                          'N',     35780.00,  1),
    ('551000', 'Odpisy dlouhodobého nehmotného a hmotného majetku', 'N',    876540.00,  1),
    ('562000', 'Úroky',                                             'N',    145000.00,  1),
    ('563000', 'Kurzové ztráty',                                    'N',     18420.55,  1),
    ('568000', 'Ostatní finanční náklady',                          'N',     24310.00,  1),
    ('591000', 'Daň z příjmů – splatná',                            'N',    325000.00,  1),
    ('601000', 'Tržby za vlastní výrobky',                          'V', -12450870.00,  1),
    ('602000', 'Tržby z prodeje služeb',                            'V',  -6874120.50,  1),
    ('604000', 'Tržby za zboží',                                    'V', -14250300.80,  1),
    ('641000', 'Tržby z prodeje dlouhodobého majetku',              'V',   -250000.00,  1),
    ('644000', 'Smluvní pokuty a úroky z prodlení',                 'V',    -12450.00,  1),
    ('648000', 'Ostatní provozní výnosy',                           'V',    -41870.00,  1),
    ('662000', 'Úroky',                                             'V',     -3120.45,  1),
    ('663000', 'Kurzové zisky',                                     'V',    -22874.10,  1),
    ('668000', 'Ostatní finanční výnosy',                           'V',         NULL, -1);

-- -----------------------------------------------------------------------------
-- 3. SVCDOC – 8 small demo files (FILEGUID = md5('svcdoc-' || n)::uuid),
--    linked from DOKUMENT 1..8. SIZE_BYTES is computed from CONTENT.
-- -----------------------------------------------------------------------------
INSERT INTO dbo."SVCDOC" ("FILEGUID", "FILENAME", "CONTENT_TYPE", "SIZE_BYTES", "CONTENT", "CREATED_AT")
SELECT
    md5('svcdoc-' || f.n)::uuid,
    f.filename,
    f.content_type,
    octet_length(f.content),
    f.content,
    timestamp '2024-01-01 08:00:00.125' + f.n * interval '7 minutes 3.25 seconds'
FROM (VALUES
    -- 1: ISDOC invoice with Czech diacritics in the file name
    (1, 'Faktura č. 2024-0001 – Žluťoučký kůň.xml', 'application/xml', convert_to(
$isdoc$<?xml version="1.0" encoding="UTF-8"?>
<Invoice xmlns="http://isdoc.cz/namespace/2013" version="6.0.2">
  <DocumentType>1</DocumentType>
  <ID>FV2024000001</ID>
  <UUID>8B2E4E5A-0C1D-4E8F-9A3B-2F6D7C1E0A01</UUID>
  <IssueDate>2024-01-01</IssueDate>
  <TaxPointDate>2024-01-01</TaxPointDate>
  <VATApplicable>true</VATApplicable>
  <Note>Žluťoučký kůň úpěl ďábelské ódy – děkujeme za Vaši objednávku.</Note>
  <LocalCurrencyCode>CZK</LocalCurrencyCode>
  <CurrRate>1</CurrRate>
  <RefCurrRate>1</RefCurrRate>
  <AccountingSupplierParty>
    <Party>
      <PartyIdentification><ID>12345678</ID></PartyIdentification>
      <PartyName><Name>Demo ERP s.r.o.</Name></PartyName>
      <PostalAddress>
        <StreetName>Náměstí Míru</StreetName>
        <BuildingNumber>15</BuildingNumber>
        <CityName>Brno</CityName>
        <PostalZone>602 00</PostalZone>
        <Country><IdentificationCode>CZ</IdentificationCode><Name>Česká republika</Name></Country>
      </PostalAddress>
      <PartyTaxScheme><CompanyID>CZ12345678</CompanyID><TaxScheme>VAT</TaxScheme></PartyTaxScheme>
    </Party>
  </AccountingSupplierParty>
  <AccountingCustomerParty>
    <Party>
      <PartyIdentification><ID>25596641</ID></PartyIdentification>
      <PartyName><Name>Alfa Trade s.r.o.</Name></PartyName>
      <PostalAddress>
        <StreetName>Vinohradská</StreetName>
        <BuildingNumber>1511/230</BuildingNumber>
        <CityName>Praha</CityName>
        <PostalZone>100 00</PostalZone>
        <Country><IdentificationCode>CZ</IdentificationCode><Name>Česká republika</Name></Country>
      </PostalAddress>
      <PartyTaxScheme><CompanyID>CZ25596641</CompanyID><TaxScheme>VAT</TaxScheme></PartyTaxScheme>
    </Party>
  </AccountingCustomerParty>
  <InvoiceLines>
    <InvoiceLine>
      <ID>1</ID>
      <InvoicedQuantity unitCode="ks">2</InvoicedQuantity>
      <LineExtensionAmount>1000.00</LineExtensionAmount>
      <LineExtensionAmountTaxInclusive>1210.00</LineExtensionAmountTaxInclusive>
      <LineExtensionTaxAmount>210.00</LineExtensionTaxAmount>
      <UnitPrice>500.00</UnitPrice>
      <UnitPriceTaxInclusive>605.00</UnitPriceTaxInclusive>
      <ClassifiedTaxCategory><Percent>21</Percent><VATCalculationMethod>0</VATCalculationMethod></ClassifiedTaxCategory>
      <Item><Description>Kancelářský papír A4, 80 g/m² – karton</Description></Item>
    </InvoiceLine>
  </InvoiceLines>
  <TaxTotal>
    <TaxSubTotal>
      <TaxableAmount>1000.00</TaxableAmount>
      <TaxAmount>210.00</TaxAmount>
      <TaxInclusiveAmount>1210.00</TaxInclusiveAmount>
      <AlreadyClaimedTaxableAmount>0</AlreadyClaimedTaxableAmount>
      <AlreadyClaimedTaxAmount>0</AlreadyClaimedTaxAmount>
      <AlreadyClaimedTaxInclusiveAmount>0</AlreadyClaimedTaxInclusiveAmount>
      <DifferenceTaxableAmount>1000.00</DifferenceTaxableAmount>
      <DifferenceTaxAmount>210.00</DifferenceTaxAmount>
      <DifferenceTaxInclusiveAmount>1210.00</DifferenceTaxInclusiveAmount>
      <TaxCategory><Percent>21</Percent></TaxCategory>
    </TaxSubTotal>
    <TaxAmount>210.00</TaxAmount>
  </TaxTotal>
  <LegalMonetaryTotal>
    <TaxExclusiveAmount>1000.00</TaxExclusiveAmount>
    <TaxInclusiveAmount>1210.00</TaxInclusiveAmount>
    <AlreadyClaimedTaxExclusiveAmount>0</AlreadyClaimedTaxExclusiveAmount>
    <AlreadyClaimedTaxInclusiveAmount>0</AlreadyClaimedTaxInclusiveAmount>
    <DifferenceTaxExclusiveAmount>1000.00</DifferenceTaxExclusiveAmount>
    <DifferenceTaxInclusiveAmount>1210.00</DifferenceTaxInclusiveAmount>
    <PayableRoundingAmount>0</PayableRoundingAmount>
    <PaidDepositsAmount>0</PaidDepositsAmount>
    <PayableAmount>1210.00</PayableAmount>
  </LegalMonetaryTotal>
  <PaymentMeans>
    <Payment>
      <PaidAmount>1210.00</PaidAmount>
      <PaymentMeansCode>42</PaymentMeansCode>
      <Details>
        <PaymentDueDate>2024-01-15</PaymentDueDate>
        <ID>123456789</ID>
        <BankCode>0100</BankCode>
        <Name>Komerční banka, a.s.</Name>
        <IBAN>CZ6501000000000123456789</IBAN>
        <BIC>KOMBCZPP</BIC>
        <VariableSymbol>2024000001</VariableSymbol>
      </Details>
    </Payment>
  </PaymentMeans>
</Invoice>
$isdoc$, 'UTF8')),

    -- 2: a few bytes of a scanned received invoice (PDF header incl. binary marker bytes)
    (2, 'FP2024000002-sken.pdf', 'application/pdf',
        convert_to('%PDF-1.7' || chr(10) || '%', 'UTF8')
        || '\xe2e3cfd30a'::bytea
        || convert_to('1 0 obj' || chr(10) || '<< /Type /Catalog /Pages 2 0 R >>' || chr(10)
                      || 'endobj' || chr(10) || '%%EOF' || chr(10), 'UTF8')),

    -- 3: plain UTF-8 text (cash voucher note)
    (3, 'pokladni-doklad-PPD2024000003.txt', 'text/plain; charset=utf-8', convert_to(
$txt$Příjmový pokladní doklad PPD2024000003
Přijato od: Moravská strojírna a.s.
Účel platby: Úhrada faktury v hotovosti
Částka: 1 250,00 Kč (slovy: jedentisícdvěstěpadesát korun českých)
Vyhotovil: Jana Nováková, pokladní
$txt$, 'UTF8')),

    -- 4: ISDOC file with the .isdoc extension
    (4, 'FV2024000004.isdoc', 'application/vnd.isdoc+xml', convert_to(
$isdoc$<?xml version="1.0" encoding="UTF-8"?>
<Invoice xmlns="http://isdoc.cz/namespace/2013" version="6.0.2">
  <DocumentType>1</DocumentType>
  <ID>FV2024000004</ID>
  <IssueDate>2024-01-01</IssueDate>
  <Note>Servis výpočetní techniky – leden 2024</Note>
  <LegalMonetaryTotal><PayableAmount>3630.00</PayableAmount></LegalMonetaryTotal>
</Invoice>
$isdoc$, 'UTF8')),

    -- 5: Peppol BIS 3 / UBL 2.1 invoice received through the webhook
    (5, 'peppol-ubl-FP2024000005.xml', 'application/xml', convert_to(
$ubl$<?xml version="1.0" encoding="UTF-8"?>
<Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"
         xmlns:cac="urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2"
         xmlns:cbc="urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2">
  <cbc:CustomizationID>urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0</cbc:CustomizationID>
  <cbc:ProfileID>urn:fdc:peppol.eu:2017:poacc:billing:01:1.0</cbc:ProfileID>
  <cbc:ID>INV-2024-0005</cbc:ID>
  <cbc:IssueDate>2024-01-01</cbc:IssueDate>
  <cbc:DueDate>2024-01-31</cbc:DueDate>
  <cbc:InvoiceTypeCode>380</cbc:InvoiceTypeCode>
  <cbc:DocumentCurrencyCode>EUR</cbc:DocumentCurrencyCode>
  <cac:AccountingSupplierParty><cac:Party>
    <cbc:EndpointID schemeID="9929">SK2020123456</cbc:EndpointID>
    <cac:PartyName><cbc:Name>Slovenská obchodná s.r.o.</cbc:Name></cac:PartyName>
  </cac:Party></cac:AccountingSupplierParty>
  <cac:AccountingCustomerParty><cac:Party>
    <cbc:EndpointID schemeID="9929">CZ12345678</cbc:EndpointID>
    <cac:PartyName><cbc:Name>Demo ERP s.r.o.</cbc:Name></cac:PartyName>
  </cac:Party></cac:AccountingCustomerParty>
  <cac:LegalMonetaryTotal>
    <cbc:LineExtensionAmount currencyID="EUR">400.00</cbc:LineExtensionAmount>
    <cbc:TaxExclusiveAmount currencyID="EUR">400.00</cbc:TaxExclusiveAmount>
    <cbc:TaxInclusiveAmount currencyID="EUR">400.00</cbc:TaxInclusiveAmount>
    <cbc:PayableAmount currencyID="EUR">400.00</cbc:PayableAmount>
  </cac:LegalMonetaryTotal>
</Invoice>
$ubl$, 'UTF8')),

    -- 6: tiny valid PNG (2x2 px, scanned receipt thumbnail)
    (6, 'účtenka-VPD2024000006.png', 'image/png',
        '\x89504e470d0a1a0a0000000d4948445200000002000000020802000000fdd49a730000001649444154789c63b82e22f7ffff7f0641d79eeb2272002ed205f21993c3d50000000049454e44ae426082'::bytea),

    -- 7: CSV export (Czech Excel style: UTF-8 BOM, semicolons, decimal comma, CRLF)
    (7, 'export-polozek-FV2024000007.csv', 'text/csv; charset=utf-8',
        '\xefbbbf'::bytea || convert_to(
            'Kód;Název položky;Množství;MJ;Cena bez DPH;Sazba DPH' || chr(13) || chr(10)
            || 'P-001;Kancelářský papír A4;10;bal;119,90;21' || chr(13) || chr(10)
            || 'P-002;Toner HP 415A černý;2;ks;2 490,00;21' || chr(13) || chr(10)
            || 'P-003;Káva zrnková 1 kg;3;ks;389,00;12' || chr(13) || chr(10)
            || 'S-010;Doprava „na klíč“;1;ks;250,00;21' || chr(13) || chr(10), 'UTF8')),

    -- 8: attachment without a content type
    (8, 'příloha bez typu.bin', NULL,
        '\x4552502d44454d4f00010203fffefd'::bytea)
) AS f(n, filename, content_type, content);

-- -----------------------------------------------------------------------------
-- 4. DOKUMENT – exactly 100 000 accounting documents (2024-01-01 .. 2025-12-31)
--    One INSERT ... SELECT over generate_series. Per-row values are derived with
--    cheap integer arithmetic (day offsets, amounts in haléře/cents) to keep the
--    load fast in PGlite.
--      TYP_DOKLADU: FV faktura vydaná, FP faktura přijatá, ZF zálohová faktura,
--                   DD daňový doklad k přijaté platbě, OD opravný daňový doklad
--                   (dobropis, negative amounts), PPD/VPD příjmový/výdajový
--                   pokladní doklad, ID interní doklad, BV bankovní výpis.
--      UHRAZENO: 1 paid, 0 unpaid, -1 partially paid.
--      STORNO:   0 valid, 1 cancelled, -1 cancellation pending.
-- -----------------------------------------------------------------------------
INSERT INTO dbo."DOKUMENT" (
    "ID", "CISLO", "TYP_DOKLADU", "SUBJECT_ID", "DATUM_VYSTAVENI", "DATUM_SPLATNOSTI", "DATUM_UZP",
    "CASTKA_ZAKLAD", "CASTKA_DPH", "CASTKA_CELKEM", "MENA", "VARIABILNI_SYMBOL", "POPIS", "POZNAMKA",
    "UHRAZENO", "STORNO", "DOKUMENTFILEGUID", "VYTVORENO"
)
SELECT
    g,
    t.typ || d.rok || lpad(g::text, 6, '0'),
    t.typ,
    CASE WHEN t.typ = 'ID' THEN NULL ELSE ((g - 1) * 7919) % 60 + 1 END,
    d.dt,
    CASE WHEN t.typ IN ('PPD', 'VPD', 'ID', 'BV') THEN NULL
         ELSE timestamp '2024-01-01 00:00:00'
              + make_interval(days => d.den + (ARRAY[14, 14, 30, 30, 60, 7])[g % 6 + 1])
    END,
    CASE WHEN t.typ = 'ZF' THEN NULL ELSE date '2024-01-01' + (d.den - g % 4) END,
    a.zaklad_hal * 0.01,
    a.dph_hal * 0.01,
    (a.zaklad_hal + a.dph_hal) * 0.01,
    a.mena,
    CASE WHEN t.typ IN ('ID', 'BV') THEN NULL ELSE d.rok || lpad(g::text, 6, '0') END,
    CASE
        WHEN t.typ = 'BV' THEN 'Bankovní výpis č. ' || (d.den_v_roce + 1)::text || '/' || d.rok   -- daily statements
        WHEN t.typ = 'ID' THEN 'Interní doklad – ' || (ARRAY[
            'časové rozlišení', 'kurzové rozdíly', 'odpisy majetku', 'zaúčtování mezd',
            'inventurní rozdíly', 'haléřové vyrovnání', 'dohadné položky'])[g % 7 + 1]
        ELSE
            (CASE t.typ
                WHEN 'ZF'  THEN 'Záloha – '
                WHEN 'DD'  THEN 'Platba zálohy – '
                WHEN 'OD'  THEN 'Dobropis – '
                WHEN 'PPD' THEN 'Příjem – '
                WHEN 'VPD' THEN 'Výdej – '
                ELSE ''
             END)
            || (ARRAY[
                'Kancelářský materiál', 'Servis výpočetní techniky', 'Pronájem kanceláří',
                'Přeprava zboží Praha – Brno', 'Stavební práce, hala č. 2', 'Údržba vozového parku',
                'Licence účetního softwaru', 'Daňové poradenství', 'Elektrická energie',
                'Vodné a stočné', 'Telekomunikační služby', 'Úklid kanceláří',
                'Školení BOZP', 'Ochranné pomůcky', 'Oprava střechy skladu',
                'Ocelové profily', 'Marketingová kampaň', 'Tisk letáků',
                'Catering – firemní akce', 'Ubytování zaměstnanců', 'Pohonné hmoty',
                'Revize elektro', 'Pečivo a mléčné výrobky', 'Zpracování mezd',
                'Právní služby', 'Nájem skladu Ostrava', 'Montáž vzduchotechniky',
                'Dřevěné palety', 'Správa webu', 'Překlad dokumentace',
                'Zboží dle dodacího listu', 'Servisní paušál', 'Pojištění majetku',
                'Náhradní díly', 'Zemní práce', 'Notebooky a příslušenství',
                'Úprava zeleně', 'Ostraha objektu', 'Kurýrní služby', 'Kalibrace měřidel'
               ])[(g * 13) % 40 + 1]
            || CASE g % 5
                WHEN 0 THEN ' ' || lpad((d.den_v_roce / 31 + 1)::text, 2, '0') || '/' || d.rok   -- ~month
                WHEN 1 THEN ', obj. ' || (1000 + (g * 7) % 9000)::text
                ELSE ''
               END
    END,
    CASE
        WHEN g % 997 = 0 THEN left(repeat('Dlouhá poznámka k dokladu: zboží bylo dodáno po částech, '
                                          || 'vyúčtování proběhne po převzetí poslední dodávky. ', 6), 400)
        WHEN g % 9 = 0 THEN (ARRAY[
            'Uhrazeno převodem, děkujeme za spolupráci.',
            'Pozor: změna bankovního spojení dodavatele.',
            'Dle rámcové smlouvy č. RS-2023/014.',
            'Reklamace vyřízena dobropisem.',
            'Splatnost prodloužena po dohodě s odběratelem.',
            'Zboží převzal p. Novotný, sklad Ostrava.',
            'Dodací list doručen poštou.',
            'Přepočteno kurzem ČNB ke dni UZP.'
           ])[(g / 9) % 8 + 1]
        ELSE NULL
    END,
    CASE WHEN g % 10 = 0 THEN 0 WHEN g % 10 = 5 THEN -1 ELSE 1 END,
    CASE WHEN g % 97 = 0 THEN 1 WHEN g % 251 = 0 THEN -1 ELSE 0 END,
    CASE WHEN g <= 8 THEN md5('svcdoc-' || g)::uuid END,
    d.dt + make_interval(mins => g % 120 + 1)
FROM generate_series(1, 100000) AS g
CROSS JOIN LATERAL (
    SELECT (ARRAY['FV', 'FV', 'FV', 'FV', 'FP', 'FP', 'FP', 'ZF', 'DD', 'OD', 'PPD', 'VPD', 'ID', 'BV'])
           [((g - 1) * 5) % 14 + 1] AS typ
) AS t
CROSS JOIN LATERAL (
    -- day offset 0..730 spread evenly over the IDs (2024 is a leap year: 366 days)
    SELECT ((g - 1)::bigint * 731 / 100000)::int AS den
) AS o
CROSS JOIN LATERAL (
    SELECT
        o.den,
        CASE WHEN o.den < 366 THEN '2024' ELSE '2025' END AS rok,
        CASE WHEN o.den < 366 THEN o.den ELSE o.den - 366 END AS den_v_roce,
        -- business hours 07:00–17:00
        timestamp '2024-01-01 07:00:00' + make_interval(days => o.den, secs => (g::bigint * 7919) % 36000) AS dt
) AS d
CROSS JOIN LATERAL (
    SELECT
        CASE WHEN g % 11 = 3 THEN 'EUR' ELSE 'CZK' END AS mena,
        CASE WHEN g % 11 = 3 OR t.typ IN ('ID', 'BV') THEN 0                 -- EUR: reverse charge
             ELSE (ARRAY[21, 21, 21, 12, 0])[(g * 3) % 5 + 1]
        END AS sazba,
        -- base amount in haléře (cents): 50.00 .. 10 049.99, every 50th x20, EUR / 25, dobropis negative
        (CASE WHEN t.typ = 'OD' THEN -1 ELSE 1 END)
        * (((g::bigint * 7919) % 1000000 + 5000) * (CASE WHEN g % 50 = 0 THEN 20 ELSE 1 END))
        / (CASE WHEN g % 11 = 3 THEN 25 ELSE 1 END) AS zaklad_hal
) AS z
CROSS JOIN LATERAL (
    SELECT
        z.zaklad_hal,
        -- VAT rounded half away from zero to whole haléře
        (z.zaklad_hal * z.sazba + CASE WHEN z.zaklad_hal < 0 THEN -50 ELSE 50 END) / 100 AS dph_hal,
        z.mena
) AS a;

-- -----------------------------------------------------------------------------
-- 5. DEMO_FILE_EVENT stays empty (filled by CALL dbo."DEMO_FILE_RECEIVED"(...)).
-- -----------------------------------------------------------------------------

-- -----------------------------------------------------------------------------
-- 6. WS_APPLICATION – Web API applications
-- -----------------------------------------------------------------------------
INSERT INTO dbo."WS_APPLICATION" ("ID", "NAZEV", "API_KEY", "API_HASH", "AKTIVNI", "CREATED_AT") VALUES
    (1, 'Demo integrace',   'demo-api-key',     'demo-api-hash',     1, '2023-06-01 09:00:00'),
    (2, 'Jiná aplikace',    'other-api-key',    'other-api-hash',    1, '2023-09-15 14:30:00'),
    (3, 'Vypnutá aplikace', 'inactive-api-key', 'inactive-api-hash', 0, '2022-11-20 08:45:00');

ANALYZE dbo."SUBJECT";
ANALYZE dbo."UCET";
ANALYZE dbo."SVCDOC";
ANALYZE dbo."WS_APPLICATION";
-- dbo."DOKUMENT" is vacuumed and analyzed by the demo build (infra/local/demo-database.ts) after
-- these scripts: VACUUM cannot run inside them, and paging needs its visibility map.
